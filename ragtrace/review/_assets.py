"""The review app's only script and stylesheet, served from ``/static/``.

The script adds keyboard shortcuts and nothing else: every page works without it (forms and
links are plain HTML). It never reads captured content, and never builds HTML from strings.
"""

from __future__ import annotations

SCRIPT = r"""
(function () {
  "use strict";
  var page = document.body.getAttribute("data-page");
  var help = document.getElementById("help");
  var form = document.getElementById("label-form");
  var rows = Array.prototype.slice.call(document.querySelectorAll("tr[data-href]"));
  var selected = -1;

  function toggleHelp() { if (help) { help.hidden = !help.hidden; } }
  var helpButton = document.getElementById("help-toggle");
  if (helpButton) { helpButton.addEventListener("click", toggleHelp); }

  function isField(el) {
    if (!el || !el.tagName) { return false; }
    var tag = el.tagName;
    if (tag === "TEXTAREA" || tag === "SELECT" || el.isContentEditable) { return true; }
    if (tag !== "INPUT") { return false; }
    return ["radio", "checkbox", "submit", "button", "reset"].indexOf(el.type) < 0;
  }
  function follow(nav) {
    var link = document.querySelector('a[data-nav="' + nav + '"]');
    if (link) { window.location.assign(link.href); return true; }
    return false;
  }
  function select(i) {
    if (!rows.length) { return; }
    selected = Math.max(0, Math.min(rows.length - 1, i));
    rows.forEach(function (row, k) { row.classList.toggle("selected", k === selected); });
    rows[selected].scrollIntoView({block: "nearest"});
  }
  function verdict(value) {
    var radio = form && form.querySelector('input[name="verdict"][value="' + value + '"]');
    if (radio) { radio.checked = true; radio.focus(); }
  }
  function failure(index) {
    var box = form && form.querySelector('select[name="failure_type"]');
    if (box && index < box.options.length) { box.selectedIndex = index; }
  }
  function focusField(name) {
    var field = form && form.querySelector('[name="' + name + '"]');
    if (field) { field.focus(); }
  }
  function submit() {
    if (!form) { return; }
    if (form.requestSubmit) { form.requestSubmit(); } else { form.submit(); }
  }

  document.addEventListener("keydown", function (ev) {
    if (ev.defaultPrevented) { return; }
    if (ev.key === "Enter" && (ev.ctrlKey || ev.metaKey) && form && form.contains(ev.target)) {
      ev.preventDefault(); submit(); return;
    }
    if (ev.ctrlKey || ev.metaKey || ev.altKey) { return; }
    if (isField(ev.target)) {
      if (ev.key === "Escape") { ev.target.blur(); }
      return;
    }
    var handled = true;
    if (page === "queue") {
      if (ev.key === "j") { select(selected + 1); }
      else if (ev.key === "k") { select(selected - 1); }
      else if ((ev.key === "o" || ev.key === "Enter") && selected >= 0) {
        window.location.assign(rows[selected].getAttribute("data-href"));
      }
      else if (ev.key === "n" || ev.key === "ArrowRight") { handled = follow("next-page"); }
      else if (ev.key === "p" || ev.key === "ArrowLeft") { handled = follow("prev-page"); }
      else if (ev.key === "?") { toggleHelp(); }
      else { handled = false; }
    } else if (page === "record") {
      if (ev.key === "j") { handled = follow("next-item"); }
      else if (ev.key === "k") { handled = follow("prev-item"); }
      else if (ev.key === "q") { handled = follow("queue"); }
      else if (ev.key === "g") { verdict("good"); }
      else if (ev.key === "b") { verdict("bad"); }
      else if (ev.key === "u") { verdict("unsure"); }
      else if (ev.key >= "0" && ev.key <= "6" && ev.key.length === 1) {
        failure(parseInt(ev.key, 10));
      }
      else if (ev.key === "n") { focusField("notes"); }
      else if (ev.key === "c") { focusField("corrected_answer"); }
      else if (ev.key === "s") { submit(); }
      else if (ev.key === "?") { toggleHelp(); }
      else { handled = false; }
    } else if (ev.key === "?") { toggleHelp(); }
    else { handled = false; }
    if (handled) { ev.preventDefault(); }
  });
})();
"""

STYLE = """
:root { color-scheme: light dark; --muted: #6b7280; --line: #d1d5db; --mark: #fde68a;
  --bad: #b91c1c; --good: #15803d; --unsure: #a16207; }
body { font: 15px/1.45 system-ui, sans-serif; margin: 0; }
header { display: flex; justify-content: space-between; align-items: center;
  padding: .5rem 1rem; border-bottom: 1px solid var(--line); }
header .brand { font-weight: 600; text-decoration: none; }
main { padding: 1rem; max-width: 110rem; margin: 0 auto; }
h1 { font-size: 1.4rem; margin: .2rem 0 1rem; }
h2 { font-size: 1.05rem; margin: 1.2rem 0 .4rem; }
.count, small { color: var(--muted); font-weight: normal; }
.filters { display: flex; flex-wrap: wrap; gap: .5rem 1rem; align-items: end; margin-bottom: 1rem; }
.filters label { display: flex; flex-direction: column; font-size: .85rem; }
.filters input[type=number] { width: 6rem; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; vertical-align: top; padding: .35rem .5rem;
  border-bottom: 1px solid var(--line); }
table.queue td.question { max-width: 40rem; overflow-wrap: anywhere; }
tr.selected { outline: 2px solid #2563eb; }
.pager, .itemnav { display: flex; gap: 1rem; margin: .8rem 0; }
.record { display: grid; grid-template-columns: minmax(0, 1fr) 22rem; gap: 1.5rem; }
.labelling { position: sticky; top: .5rem; align-self: start; }
.labelling form { display: flex; flex-direction: column; gap: .6rem; }
.labelling textarea, .labelling input[type=text], .labelling select { width: 100%;
  box-sizing: border-box; font: inherit; }
fieldset { border: 1px solid var(--line); }
.verdict { margin-right: .8rem; }
.text { white-space: pre-wrap; overflow-wrap: anywhere; padding: .6rem;
  border: 1px solid var(--line); border-radius: 4px; }
mark.unsupported { background: var(--mark); color: #111;
  text-decoration: underline wavy var(--bad); }
ol.chunks { padding-left: 0; list-style: none; }
ol.chunks li { margin-bottom: .8rem; }
.chunkhead { font-size: .85rem; color: var(--muted); margin-bottom: .2rem; }
dl.meta { display: grid; grid-template-columns: max-content 1fr; gap: .2rem 1rem; }
dl.meta dt { color: var(--muted); }
dl.meta dd { margin: 0; overflow-wrap: anywhere; }
.badge { display: inline-block; padding: 0 .4rem; border-radius: 3px; font-size: .8rem;
  border: 1px solid var(--line); }
.badge.fail, .badge.bad, .badge.secret, .badge.pii, .badge.toxicity { color: var(--bad);
  border-color: var(--bad); }
.badge.pass, .badge.good { color: var(--good); border-color: var(--good); }
.badge.unsure, .badge.disagreement { color: var(--unsure); border-color: var(--unsure); }
.saved { padding: .4rem .6rem; border-left: 4px solid var(--good); }
.held { padding: .4rem .6rem; border-left: 4px solid var(--unsure); }
.refused { padding: .4rem .6rem; border-left: 4px solid var(--bad); font-weight: 600; }
.badge.held { color: var(--unsure); border-color: var(--unsure); }
.error { color: var(--bad); }
pre { white-space: pre-wrap; overflow-wrap: anywhere; font-size: .8rem; }
kbd { font-size: .75rem; border: 1px solid var(--line); border-radius: 3px; padding: 0 .25rem; }
#help { position: fixed; right: 1rem; top: 3rem; background: Canvas; color: CanvasText;
  border: 1px solid var(--line); padding: 1rem; box-shadow: 0 2px 12px rgba(0,0,0,.2); }
ol.history { padding-left: 0; list-style: none; }
ol.history li { margin-bottom: .5rem; }
ol.history .role { font-size: .8rem; color: var(--muted); }
ol.history li.user .text { border-left: 4px solid #2563eb; }
table.session tr.current { background: var(--mark); color: #111; }
table.session td.question { max-width: 30rem; overflow-wrap: anywhere; }
table.tools tr.fail td:first-child { border-left: 4px solid var(--bad); }
table.tools pre { margin: 0; }
.standalone { font-size: .9rem; color: var(--muted); }
@media (max-width: 60rem) { .record { grid-template-columns: 1fr; } }
"""
