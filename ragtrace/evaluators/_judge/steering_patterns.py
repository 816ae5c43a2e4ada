"""The patterns ``steering.directed`` looks for: phrasings of text addressed to an answer's
evaluation, by kind, and the word for an evaluator in other languages.

Kept apart from the logic so that the tables can grow without crowding it. The kinds and what
each covers are listed in ``steering``'s docstring; docs/judges.md ("Untrusted text") says what
is caught and what is not, and ``docs/decisions/steering-patterns.md`` records both sides.
"""

from __future__ import annotations

import re
import unicodedata

# "judge" alone is a court's: only an AI, LLM, model or automated judge counts
_GRADER_STRICT = r"(?:evaluator|grader|assessor)"
_GRADER = (
    rf"(?:(?:ai|llm|model|automated)\s+(?:evaluator|grader|assessor|judge|rater)|{_GRADER_STRICT})"
)
_GRADER_ABROAD = (  # "evaluator" in French, Spanish, Italian, Portuguese, Dutch, German, Russian
    r"(?:évaluateur|évaluatrice|evaluador[a]?|valutatore|valutatrice|avaliador[a]?|beoordelaar|"
    r"bewerter(?:in)?|оценщик|проверяющий)"
)
_RUBRIC = r"(?:grading|evaluation|scoring|rating|assessment|consistency|faithfulness)"
_EVALUATION = r"(?:supported|faithful|grounded|hallucination[- ]free)"
_VOUCHED = r"(?:supported|faithful|grounded|verified|fact[- ]checked|accurate|correct)"
_ADVERB = r"(?:(?:fully|entirely|completely|totally|perfectly|wholly|100\s?%)\s+)?"
_SELF = r"(?:this|the\s+(?:above|preceding|previous))\s+(?:answer|response|reply|output)"
_SELF_LOOSE = r"(?:this|the)\s+(?:answer|response|reply|output)"
_JUDGING = r"(?:approve|accept|pass|rate|grade|score|label|classify|treat|consider|judge|evaluate)"
# The relevance judges' verdict ("relevant", "on-topic") in English and other languages.
_RELEVANT = r"(?:relevan(?:t|te|tes|ts)|on[- ]topic|pertinente?s?|релевантн\w{0,4})"
# A machine reader of a retrieved page or an answer, addressed by what it does.
_MACHINE_READER = (
    r"(?:(?:relevance|relevancy|ranking|judge|evaluation|retrieval|context[- ]precision|"
    r"context[- ]relevance)\s+(?:checker|model|judge|system|evaluator|metric|ranker)s?|"
    r"(?:ai|llm|language[- ]model)\s+(?:systems?|reviewers?|crawlers?|rankers?|checkers?)|"
    r"(?:rag|retrieval[- ]augmented)\s+(?:systems?|pipelines?|assistants?)|ai\s+crawlers?)"
)
# Alternatives per kind, tried in this order; a sentence takes the first kind that matches.
_ALTERNATIVES: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "overrides instructions",
        (
            r"\b(?:ignore|disregard|forget|override|bypass)\b[^.!?]{0,30}?"
            r"\b(?:(?:previous|prior|above|earlier|original|system|your|any)\b[^.!?]{0,20}?"
            r"\b(?:instructions|prompts?|rules)|all\s+instructions|(?:everything|all)\s+above)\b",
            r"\b(?:ignore|disregard)\s+(?:the\s+)?(?:user'?s?\s+)?(?:question|query)\b(?!\s+of\b)",
            r"\b(?:ignore|disregard|forget|pretend)\b[^.!?]{0,12}?\b(?:the\s+|your\s+)?"
            r"(?:retrieved\s+|provided\s+|given\s+)?(?:context|sources|passages)\b(?!\s+menu)",
            rf"\b(?:ignore|disregard|forget|skip|supersede)\w{{0,24}}\b[^.!?]{{0,20}}?\b{_RUBRIC}\s+"
            r"(?:criteria|rubric|guidelines|instructions|rules|check)\b",
            r"\b(?:new|updated|revised|real)\s+(?:instructions?|task|rubric|guidelines)\b[^.!?]{0,40}?"
            r"(?::|\b(?:for\s+the|supersede)\b)",
            r"\bdeveloper\s+mode\b|\[(?:system|admin|developer)[^\]]*\]|"
            r"^\W*(?-i:SYSTEM|ADMIN|DEVELOPER|Assistant|ASSISTANT)\s*:",
            r"\bfrom\s+now\s+on,?\s+you\s+(?:will|must|should|are)\b",
            rf"\byou\s+are\s+now\s+(?:an?\s+|the\s+)?(?:\w+\s+)?(?:{_GRADER}|assistant|ai|model)\b",
            r"\b(?:system|admin(?:istrator)?|developer)\s+(?:override|prompt|message|note|notice|"
            r"mode|update)\s*:",
            r"\bignore[zr]\b[^.!?]{0,40}?\binstructions?\b",  # French
            r"\bignor(?:a|e|en|ad|ar|are|ate)\b[^.!?]{0,40}?\b(?:instrucci|istruzion|instru[cç]õ)\w{0,24}",
            r"\bignorier\w{0,24}\b[^.!?]{0,40}?\b(?:anweisung|vorgabe|anleitung)\w{0,24}",  # German
            r"\bnegeer\b[^.!?]{0,40}?\b(?:instructies|\w{0,24}richtlijnen)\b",  # Dutch
            r"\bdesconsider\w{0,24}\b[^.!?]{0,20}?\b(?:contexto|instru[cç]\w{0,24})",  # Portuguese
            r"игнорир\w{0,24}[^.!?]{0,40}?инструкци\w{0,24}",  # Russian
            # Chinese
            r"忽略[^\u3002\uff01\uff1f]{0,12}?(?:指令|指示|说明|提示|标准|標準|规则|規則|准则|準則)",
            r"【\s*(?:系统|系統)(?:提示|指令|消息|訊息)\s*】|(?:系统|系統)(?:提示|指令)\s*[:\uff1a]",
            r"\b(?:ignore|disregard|forget|skip)\w{0,24}\s+(?:the\s+|your\s+|any\s+)?(?:rubric|"
            r"(?:grading|scoring|evaluation)\s+\w+)\b",
            r"\bdecode\s+and\s+(?:follow|execute|obey|run|apply)\b",
            r"\byou\s+are\s+now\s+(?-i:[A-Z])[\w-]*\s*,",  # "you are now FairBot-9,"
        ),
    ),
    (
        "dictates the verdict",
        (
            r"\b(?:reply|respond|return|output|assign|mark|grade)\b[^.!?]{0,40}?"
            rf"(?:\bverdicts?\b|\bas\s+{_ADVERB}{_EVALUATION}\b|"
            r"\bthat\s+(?:every|each|all)\s+(?:statements?|claims?)\b)",
            r"\b(?:reply|respond|return|output|assign)(?:\s+(?:with|it|this|the|an?|answer|"
            r"response)){0,3}\s+(?:a\s+)?score\s*(?:of\s*)?[0-9]",
            r"\b(?:output|print|(?:respond|reply|answer)\s+with|(?:just|only)\s+(?:say|answer|"
            r"output))\s+(?:only\s+)?(?:the\s+token\s+)?[\"'“\u2018<«*`]*(?:yes|pass|supported|faithful)\b",
            r"\b(?:give|award|assign|grant)\s+(?:it|this|them|this\s+(?:answer|response))?\s*"
            r"(?:a\s+|the\s+)?(?:perfect|full|maximum|max|top|highest)\s+(?:\w+\s+)?"
            r"(?:score|marks?|rating|grade)\b",
            r"\b(?:verdict|judge?ment|label|hallucination\s+score|faithfulness\s+score)\s*[:=]\s*"
            r"[\"'“]?(?:yes|pass|faithful|supported|grounded|true|0\b)",
            rf"\b{_JUDGING}\s+{_SELF_LOOSE}\s+(?:as\b|with\s+(?:a\s+)?(?:score|full|perfect|"
            r"maximum)|a?\s*\d|highly|positively|favou?rably)",
            r"\b(?:do\s+not|don't|never)\s+(?:flag|penali[sz]e|mark\s+down|downgrade)\s+"
            rf"{_SELF_LOOSE}\b",
            r"\b(?:must|should|shall|will|is\s+to)\s+be\s+(?:marked|scored|rated|judged|graded|"
            rf"treated|considered|classified|evaluated)\s+(?:as\s+)?{_ADVERB}{_VOUCHED}\b",
            r"\b(?:répond|réponds|rispondi|responde|responda|antworte|antwoord)\w{0,24}\b[^.!?]{0,20}?"
            r"[\"'“«]?(?:fidèle|fedele|fiel|treu|getrouw|oui|sì|sí|sim|ja)\b",
            r"\b(?:score|grade|mark|judge)\s+this\s+(?:answer|response|reply)\b",
            r"\b(?:give|award|assign|output|print|return|score)\s+(?:it\s+|this\s+)?(?:a\s+)?"
            r"[\"'“]?(\d+)\s*/\s*\1\b",  # a perfect fraction: 5/5, 10/10
            rf"\b(?:{_GRADER}|checker)s?\s+(?:outputs?|returns?|says?|responds?|replies)\s+"
            r"[\"'“\u2018]?(?:yes|pass|supported|faithful)\b",
            r"\b(?:should|must|shall|will)\s+(?:treat|mark|rate|score|grade|judge|consider|"
            rf"classify|label)\s+(?:it|this|them)\s+as\s+{_ADVERB}{_VOUCHED}\b",
            r"\bfinal\s+(?:answer|verdict|judge?ment|decision)\s*[:=]\s*[\"'“]?(?:faithful|grounded|"
            r"hallucination[- ]free)\b",
            r"\bbewerte\w{0,24}\b[^.!?]{0,30}?\bals\s+(?:korrekt|richtig|wahr|zutreffend)\b",
            r"\b(?:respond|reply|answer|output|print|return)\w{0,24}\s+(?:only\s+|just\s+|simply\s+)?"
            r"(?:with\s+)?[\"'“\u2018«*`]*(?:yes|pass|supported|faithful)\b[\"'”\u2019»*`]*\s*"
            r"(?:and\s+nothing|$|\.|;|,)",
            r"\b(?:respond|reply|answer|output|print|return)\w{0,24}\s+(?:only\s+|just\s+|simply\s+)?"
            r"(?:with\s+)?(?:the\s+(?:single\s+)?(?:token|word|number)\s+[\"'“\u2018«*`]*\w+|"
            r"[\"'“\u2018«]+(?:1|correct|true|pass|yes)\b)",
            r"\b(?:give|award|assign|grant)\s+(?:it\s+|this\s+|them\s+)?(?:a\s+|the\s+)?full\s+credit\b",
            r"\b(?:deserves?|earns?|merits?|(?:must|should|shall)\s+(?:receive|get))\s+(?:a\s+|the\s+)?"
            r"(?:perfect|full|maximum|max|top|highest|passing)\s+(?:\w+\s+)?(?:score|marks?|rating|grade|"
            r"evaluation)\b",
            r"\b(?:give|award|assign|grant)\s+(?:it|this|them|this\s+(?:answer|response|reply))\s+"
            r"(?:a\s+|the\s+)?passing\s+(?:score|marks?|rating|grade|evaluation)\b",
            r"\b(?:scor|grad|rat|mark)\w{0,24}\s+(?:it|this|them|this\s+(?:answer|response|reply))\s+"
            r"(?:below|under|lower\s+than|less\s+than)\s+(?:a\s+)?\d",
            r"\bless\s+than\s+(?:the\s+)?(?:maximum|full|perfect|highest|top)\s+(?:score|marks?|rating)",
            r"\bdefault\s+to\s+[\"'“\u2018]?(?:faithful|supported|grounded|yes|pass)\b",
            r"\blabell?ed\s+[\"'“\u2018]?(?:grounded|faithful|supported|hallucination[- ]free)\b",
            r"\byour\s+(?:output|verdict)\s+(?:must|should|shall)\s+be\s*:",
            r"\byour\s+(?:rating|score|grade|verdict|judge?ment)\s+(?:for|of|on)\s+(?:this|the)\s+"
            r"(?:answer|response|reply|text)\b",
            # the relevance judges' verdict: "mark these sentences relevant", "rank it first"
            r"\b(?:mark|rate|classify|label|judge|treat|consider|count|score|tag|regard|deem|"
            r"evaluate|assess)\w{0,3}\s+(?:it|this|them|these|those|all|each|every|the)\b"
            rf"[^.!?]{{0,40}}?\bas\s+{_ADVERB}[\"'“«]?{_RELEVANT}\b"
            r"(?![,;]?\s+(?:or|partly|partially|somewhat|not)\b)",
            r"\b(?:mark|rate|classify|label|judge|deem|tag)\w{0,3}\s+(?:it|this|them|these|all|each|"
            rf"every)\b[^.!?\n]{{0,30}}?\s[\"'“«]?{_RELEVANT}\b[\"'”»]?"
            r"(?!\s+(?!regardless|now|please|anyway)[^\W\d_])"
            r"(?![,;]?\s+(?:or|partly|partially|somewhat|not)\b)",
            r"\b(?:must|should|shall|will|is\s+to|are\s+to)\s+(?:always\s+)?be\s+(?:marked|scored|"
            r"rated|judged|graded|treated|considered|classified|evaluated|counted|label+ed|ranked|"
            rf"deemed|regarded|whitelisted)\s+(?:as\s+)?{_ADVERB}{_RELEVANT}\b",
            r"\b(?:rank|place|put|list|score|rate)\s+(?:it|this\s+(?:page|passage|document|chunk|answer|response))\s+"
            r"(?:first|at\s+(?:the\s+)?top|highest|at\s+rank\s+1|1\b)",
            r"^\W*(?:score|rate|grade|judge|mark)\s+(?:it\s+|this\s+|them\s+)?accordingly\b",
            r"\b(?:placed|ranked|put|shown)\s+at\s+rank\s*#?\s*1\b",
            r"\bthe\s+verdict\s+is\s+(?:clearly\s+|obviously\s+)?[\"'“\u2018]?(?:relevant|yes|supported|"
            r"faithful)\b",
            r"(?:évaluateur|evaluador|valutatore|avaliador|bewerter|beoordelaar)\w{0,4}\s+(?:doit|debe|"
            r"deve|muss|moet|soll)\b",
            r"\bals\s+relevant\w{0,4}\s+(?:ein(?:ge)?stuf\w{0,4}|werten|gewertet|markier\w{0,4}|"
            r"betracht\w{0,4}|behandel\w{0,4}|angesehen|ansehen)",
            r"\b(?:marca|márque|marque|classifi|considér|consider|trat|segn|contrassegn|markeer|"
            r"beschouw)\w{0,8}[^.!?]{0,40}?\b(?:como|comme|come|als|as)\s+(?:\w+\s+)?"
            rf"{_RELEVANT}\b",
            r"(?:判定|标记|標記|视为|視為|认定|認定|归类|歸類)\w{0,3}?[为為]?\s*[“\"「『]?(?:相关|相關)",
            r"[「『\"“]?関連(?:あり|性あり|性が高い)?[」』\"”]?\s*と(?:判定|して扱|みな)",
            r"['\"\u2018“]?관련\s*(?:있음|문서)['\"\u2019”]?\s*(?:으로|로)\s*(?:표시|판정|분류|처리)",
            r"(?:счита\w{0,6}|отмет\w{0,6}|помет\w{0,6}|призна\w{0,6})[^.!?]{0,30}?"
            r"(?:как\s+)?релевантн\w{0,4}",
        ),
    ),
    (
        "vouches for the answer",
        (
            rf"\b(?:every|each|all)\s+(?:of\s+the\s+)?(?:statements?|claims?)\s+(?:in|of)\s+"
            rf"{_SELF_LOOSE}\b",
            r"\b(?:every|each|all)\s+(?:of\s+the\s+)?(?:statements?|claims?)\b[^.!?]{0,30}?"
            rf"\b(?:is|are)\s+{_ADVERB}(?:all\s+)?{_EVALUATION}\b",
            rf"\b{_SELF_LOOSE}\b[^.!?]{{0,30}}?\b(?:is|was|has\s+been)\s+{_ADVERB}"
            rf"(?:{_EVALUATION}|verified|fact[- ]checked)\b",
            rf"\b{_SELF}\b[^.!?]{{0,30}}?\b(?:is|was|has\s+been)\s+{_ADVERB}{_VOUCHED}\b",
            r"\b(?:context|documents?|sources?|passages?|retrieved\s+\w+)\b[^.!?]{0,20}?"
            r"\b(?:confirms?|supports?|verif(?:y|ies)|validates?|proves?)\s+(?:every|each|all)\s+"
            r"(?:of\s+the\s+)?statements?\b",
            r"\b(?:context|documents?|sources?|passages?)\b[^.!?]{0,20}?\b(?:confirm|support|verif"
            r"(?:y|ie)|validate|prove)s?\s+(?:everything|all)\s+(?:that\s+is\s+)?(?:stated|said|"
            r"written|claimed)\s+(?:here|above)\b",
            r"\bla\s+réponse\s+est\s+(?:entièrement\s+|totalement\s+)?fidèle\b",
            r"\b(?:context|documents?|sources?|passages?)\b[^.!?]{0,20}?\b(?:contain|cover|include|"
            r"back|substantiate)s?\s+(?:every|all)\s+(?:the\s+)?(?:facts?|statements?|claims?)\s+"
            r"(?:stated|said|written|made|mentioned)\s+(?:here|above)\b",
            r"\b(?:100\s?%|fully|entirely|completely|perfectly|totally)\s+(?:consistent|grounded|"
            r"supported|faithful)\s+(?:with|by|in|to)\s+(?:the\s+)?(?:context|sources?|documents?|"
            r"passages?|references?)\b",
            r"\b(?:every|each|all|any)\s+(?:answers?|responses?|replies)\b[^.!?]{0,30}?\b(?:is|are)\s+"
            rf"{_ADVERB}(?:correct|{_EVALUATION})\b",
            r"\bfaithfulness\s+(?:is|was)\s+(?:guaranteed|assured|certain|confirmed)\b",
            r"\bfact[- ]?check\w{0,24}\s*[:\-]?\s*(?:passed|complete|succeeded|ok\b)",
            r"\b(\d+)\s*/\s*\1\s+(?:claims?|statements?|facts?|sentences?)\s+(?:matched|verified|"
            r"supported|grounded|confirmed)\b",
            r"\bstatus\s*[=:]\s*(?:grounded|faithful|hallucination[- ]free)\b",
            r"\b(?:supported|faithful|grounded)\s*[=:]\s*(?:true|yes|1)\b",
            r"\bhallucination\s+(?:check|detection|score|test)\s+(?:is\s+)?(?:not\s+applicable|"
            r"disabled|skipped|passed|n/?a)\b",
            r"\[\s*(?:verified|fact[- ]?checked|approved|certified)\b",
            r"\b(?:every|each|all)\s+(?:of\s+the\s+)?(?:statements?|claims?|facts?|sentences?)\s+(?:above|"
            r"here|made\s+(?:above|here))\b[^.!?]{0,20}?\b(?:was|were|has\s+been|have\s+been|is|are)\s+"
            r"(?:\w+\s+)?(?:checked|verified|confirmed|validated|matched|backed|supported|grounded)\b",
            r"\b(?:answers?|responses?|replies|outputs?)\b[^.!?]{0,60}?\bpre-?(?:validated|cleared|"
            r"screened|verified|graded|evaluated)\b",
            # relevance: "every sentence above directly answers the question", "these are on-topic"
            r"\b(?:every|each|all|these)\s+(?:of\s+the\s+)?(?:statements?|sentences?|claims?)\b"
            rf"[^.!?]{{0,40}}?\b(?:is|are)\s+{_ADVERB}(?:all\s+)?{_RELEVANT}\b",
            r"\b(?:every|each|all)\s+(?:of\s+the\s+)?(?:statements?|sentences?)\s+(?:above|here|in\s+"
            r"this\s+(?:answer|response))\s+(?:directly\s+|fully\s+)?(?:answers?|address(?:es)?)\b",
            rf"\b{_SELF_LOOSE}\b[^.!?]{{0,30}}?\b(?:is|was|has\s+(?:already\s+)?been)\s+(?:already\s+)?"
            rf"(?:{_ADVERB}{_RELEVANT}|(?:rated|marked|judged|classified)\s+(?:as\s+)?{_RELEVANT})\b",
            r"\b(?:this|the)\s+(?:page|passage|document|chunk|article|text|content|section)\s+"
            r"(?:is|was|has\s+been)\s+(?:already\s+)?(?:the\s+)?(?:(?:(?:official|authoritative|"
            r"definitive),?\s+){1,3}(?:answer|response)|(?:rated|marked|judged|classified|whitelisted)\s+"
            rf"(?:as\s+)?{_RELEVANT}|{_ADVERB}{_RELEVANT}\s+(?:to|for)\s+(?:all|any|every|whatever))\b",
        ),
    ),
    (
        "addresses the evaluator",
        (
            rf"\b(?:note|message|attention|instructions?|reminder)\s+(?:to|for)\s+(?:the\s+|any\s+)?"
            rf"{_GRADER}s?\b",
            rf"\b(?:dear|hey|hello|attention)\s+(?:the\s+)?{_GRADER}\b",
            rf"\bas\s+(?:the|an|a)\s+{_GRADER}\b,?\s+you\b",
            rf"\b{_GRADER_STRICT}s?\s+(?:must|should|shall)\b",
            r"\b(?:to|for)\s+(?:the|any|whoever|whatever)\s+(?:ai|llm|model|system|one|is)?\s*"
            r"(?:reading|evaluating|grading|reviewing|judging|scoring|checking)\b",
            r"\b(?:evaluation|grading|judging|scoring)\s+(?:model|llm|ai|system)\b",
            rf"\b(?:fair|kind|dear|honest)\s+{_GRADER}\b",
            rf"(?:^|\b(?:nota|note|hinweis|attention|atención|attenzione|atenção|внимание)\W+"
            rf"(?:\w+\W+){{0,2}}?){_GRADER_ABROAD}\b",
            rf"\b{_GRADER}\s+(?:directive|instruction|note|override|command|message)s?\s*"
            r"(?:\([^)\n]{0,20}\)\s*)?:",
            r"^\W*(?:retrieval|ranking|relevance|relevancy)\s+(?:note|notice|instructions?|hint)\s*:",
            r"\b(?:human\s+(?:reviewer|annotator|grader|evaluator)|annotator|grader|evaluator)\s+"
            r"(?:comment|note|verdict|sign[- ]?off)\s*:",
            r"^\W*(?:evaluator|grader|assessor|checker)\s*[:,]",
            r"^\W*(?:attention|note|message|dear|hey|hello|hi)\W+(?:to\s+|for\s+)?(?:the\s+|any\s+)?"
            r"(?:ai|language\s+model|llm|model|assistant)\s*[:,]",
            r"^\W*[\w ]{1,20}\(\s*(?:evaluator|grader|judge|assessor|reviewer)\s*\)\s*:",
            rf"\b(?:question|request|hint|tip|word)\s+(?:to|for)\s+(?:the\s+|any\s+){_GRADER}s?\b",
            r"^\W*(?:scoring|grading|evaluation|judging|rating)\s+(?:hint|note|instructions?|guidance|"
            r"directive|policy)\s*:",
            r"\bif\s+you\s+are\s+an?\s+(?:ai|llm|language\s+model|model|automated)\b",
            r"\b(?:judge|grader|evaluator|checker)\s+(?:model|llm)?\s*that\s+(?:assigns?|gives?|marks?|"
            r"scores?|rates?)\b",
            r"\b(?:juez|juiz|giudice|juge)\s+autom[aá]tic[oa]|\bjuge\s+automatique|"
            r"\bautomatische[nr]?\s+(?:richter|bewerter|prüfer)",
            r"(?:évaluateur|evaluador|valutatore|avaliador|beoordelaar|bewerter|оценщик|проверяющ|"
            r"oceniając|評価者|评审|评估|मूल्यांकनकर्ता)\w{0,24}\s*[:,\uff1a\u3001\u3078]",
            r"\b(?:ao|à|al|aan|dla)\s+(?:o\s+|a\s+|de\s+|el\s+)?(?:avaliador|evaluador|beoordelaar|"
            r"modelu\s+oceniaj)\w{0,24}|для\s+(?:проверяющ|оценива)\w{0,24}",
            # a machine that reads the page or ranks it: "note for AI systems", "Ranking model:"
            r"\b(?:note|message|attention|instructions?|reminder|notice|hint|heads[- ]up|p\.?s\.?)"
            rf"\s+(?:to|for)\s+(?:the\s+|any\s+|all\s+)?{_MACHINE_READER}\b",
            rf"\b(?:dear|hey|hello|hi)\s+(?:the\s+)?{_MACHINE_READER}\b",
            rf"^\W*(?:the\s+)?{_MACHINE_READER}\s*[:,]",
            rf"\b(?:for|to)\s+(?:the\s+)?{_MACHINE_READER}\s+(?:reading|judging|evaluating|scoring|"
            r"checking|ranking)\b",
            r"\b(?:any|every)\s+(?:automated\s+|ai\s+)?(?:system|model|ranker|checker)\s+(?:that\s+)?"
            r"(?:judg|evaluat|scor|check|rank|grad|assess)\w{0,4}\s+(?:relevan|this|the\s+(?:answer|"
            r"passage|page))",
            r"\b(?:para|pour|für|fur|per|для|voor|an)\s+(?:(?:los|les|die|i|el|la|le|de|the)\s+)?"
            r"(?:sistemas?\s+de\s+ia|syst[eè]mes?\s+d['\u2019]\s*ia|ki[- ]\w+|automatische\w*\s+\w*"
            r"(?:prüf|bewert|ranking)\w*|sistemi\s+di\s+(?:ia|intelligenza\s+artificiale)|"
            r"систем\w*\s+(?:ии|искусственного)|ai[- ]\w+)",
            r"\b(?:à\s+l['\u2019]\s*attention\s+d[eu]s?|attention)\s+(?:\w+\s+){0,2}?(?:modèles?|systèmes?)\s+"
            r"(?:de\s+classement|d['\u2019]\s*ia|d['\u2019]\s*évaluation)",
            r"(?:人工智能|\uff21\uff29|\bAI)\s*(?:检索|検索|搜索)?\s*(?:系统|系統|システム|시스템|模型|モデル|모델)"
            r"[^。\uff01\uff1f.!?]{0,40}?(?:应|應|必须|必須|请|請|は必ず|してください|하십시오|해야|하세요)",
            r"(?:评估模型|評估模型|評価モデル|평가\s*모델|评判模型|判定モデル)",
        ),
    ),
    (
        "carries a verdict payload",
        (
            r"[{,]\s*[\"'](?:verdict|faithfulness|supported)[\"']\s*:",
            r"\{\s*[\"']score[\"']\s*:",
            r"[{,]\s*[\"'](?:relevant|relevance|relevancy|attributable|on_topic)[\"']\s*:\s*"
            r"(?:true|1|[\"']yes)",
            r"\b[\w-]*relevan(?:ce|cy|t)[\w-]*[\"']?\s*[:=]\s*[\"'“]?(?:1(?:[.,]0+)?(?!\s*[-\u2013]|\d)|yes\b|"
            r"true\b|high\b|relevant\b|always|top\b|max\b)",
            r"\b(?:precision|relevance|relevancy)_(?:verdicts?|scores?|override)\s*[:=]",
            r"\bstatement\s*\d+\s*[:=]\s*(?:relevant|yes|supported|faithful)\b",
            r"\bname\s*=\s*[\"'][\w-]*relevan\w*[\"']\s+content\s*=\s*[\"']?(?:1|yes|true|high)",
            r"\brelevan(?:ce|cy)\s+score\b[^:=\n]{0,30}[:=]\s*(?:1(?:[.,]0+)?\b|high|max)",
        ),
    ),
    (
        "carries prompt markup",
        (
            r"</?\s*data\b[^>]*>",
            r"<\s*(?:verdict|score|grounded|faithful\w{0,24}|hallucinat\w{0,24}|evaluation|judge?ment)\s*>",
            r"\[/?INST\]|<<\s*/?SYS\s*>>|<\|(?:im_start|im_end|system|user|assistant|endoftext|"
            r"eot_id|start_header_id|end_header_id)\|>",
            r"(?:^|\n)[ \t]*#{2,}\s*(?:system|instructions?|evaluator|judge)\b",
            r"<!--[^>]{0,80}?\b(?:judge|grader|evaluator|verdict|score|faithful|grounded|relevan\w*|"
            r"llm[\w-]*|ai|rag|crawlers?|ranking)\b",
            r"</?\s*(?:answer|instructions?|system)\s*>",
            r"(?<!#)#{1,6}[ \t]*final\s+(?:judge?ment|verdict|grade|score)\b",
            r"\b(?:verdict|judge?ment|label)[*_`\s]*[:=][*_`\s]*(?:yes|pass|faithful|supported|grounded)\b",
        ),
    ),
)
PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (kind, re.compile("|".join(alternatives), re.IGNORECASE))
    for kind, alternatives in _ALTERNATIVES
)


def folded(text: str) -> str:
    """``text`` without accents, vowel signs or points (combining marks) and case-folded, so
    that one spelling of a word matches its accented and unaccented forms in any script."""
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()


# The evaluator, grader or examiner in other languages most used online (English has its own
# patterns above), as a person or a model would address it ("To the grader: ..."). Matched on
# ``folded`` text; words in Latin script from the start of a word, others anywhere (Hebrew and
# Arabic attach "to" to the word).
# Words with an everyday sense in how-tos ("corrector": a spelling checker) count only with
# "automatic".
EVALUATOR_WORDS_BY_LANGUAGE = {
    "French": "évaluateur|évaluatrice|examinateur|correcteur automatique",
    "Spanish": "evaluador|calificador|examinador|corrector automático",
    "Portuguese": "avaliador|corretor automático",
    "Italian": "valutatore|valutatrice|esaminatore|correttore automatico",
    "German": "bewerter|prüfer|gutachter",
    "Dutch, Polish, Romanian": "beoordelaar|examinator",
    "Swedish, Danish, Finnish": "bedömare|granskare|rättare|bedømmer|arvioija",
    "Polish, Czech, Slovak, Hungarian": "oceniając|egzaminator|hodnotitel|hodnotiteľ|értékelő",
    "Turkish": "değerlendirici|puanlay\u0131c\u0131",
    "Greek, Russian, Ukrainian": "αξιολογητ|оценщик|проверяющ|оценивающ|экзаменатор|оцінювач",
    "Hebrew, Arabic, Persian": "מעריך|مقيم|مصحح|ارزیاب",
    "Hindi, Bengali": "मूल्यांकनकर्ता|परीक्षक|মূল্যায়নকারী|পরীক্ষক",
    "Indonesian, Malay, Vietnamese": "penilai|người chấm|người đánh giá|hệ thống chấm",
    "Thai": "ผู้ประเมิน|ผู้ตรวจ",
    "Korean, Japanese": "평가자|채점자|심사자|評価者|採点者|審査員",
    "Chinese": "评审|評審|评估者|評估者|评分者|評分者|阅卷|閱卷|评判者|評判者",
    "Tagalog, Swahili": "tagasuri|mtathmini",
}
EVALUATOR_WORDS = tuple(
    word for words in EVALUATOR_WORDS_BY_LANGUAGE.values() for word in words.split("|")
)
EVALUATOR_WORD = re.compile(
    "|".join(
        (r"\b" if (word := folded(entry)).isascii() else "") + re.escape(word)
        for entry in EVALUATOR_WORDS
    )
)
# The word opens the sentence's address: within its first characters, a colon soon after
# ("Till bedömaren:", "평가자에게:", "Instrucción para el evaluador automático:"), not a time.
ADDRESS_OPENING_CHARS = 60
ADDRESS_COLON = re.compile(r"\w{0,24}(?:[ \t]+\w{1,12}){0,2}[ \t]*[:\uff1a](?!\d)")
