"""Synonyms for the ``synonyms`` perturbation of ``ragtrace eval --perturb``, written for ragtrace.

One group per line: words that mean the same in a question to a help desk or an assistant.
Only lower-case single words; a word belongs to one group at most. Kept as Python text so it
ships inside the package with no package-data settings. ``ragtrace._offline.perturb`` reads it.
"""

from __future__ import annotations

SYNONYM_GROUPS = """\
buy purchase
big large
small little
start begin
fast quick
show display
need require
get obtain
choose pick select
allowed permitted
enough sufficient
often frequently
maybe perhaps
answer reply
fix repair
broken faulty
wrong incorrect
error fault
problem issue
remove delete
keep retain
stop halt
try attempt
use utilize
send transmit
see view
find locate
tell inform
explain describe
possible feasible
cheap inexpensive
costly expensive
noisy loud
quiet silent
happen occur
car automobile
phone telephone
almost nearly
whole entire
main primary
usual normal
hard difficult
easy simple
safe secure
rapid swift
enable activate
disable deactivate
modify alter
quickly rapidly
begins starts
shows displays
needs requires
bought purchased
mean signify
outdoors outside
slow sluggish
cold chilly
icon symbol
kept retained
blinking flashing
happens occurs
stored saved
"""
