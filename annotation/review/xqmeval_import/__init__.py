"""The XQ-MEval release import: gold segments, candidates and review decisions from the published release.

It lives in the review stage because the records it ends with are the review's: decisions on candidates, and
the candidates' review outcome (only injection and review write a candidate). ``domain`` reads and checks the
files (pure), ``services`` writes the rows, ``writers`` is the entry of the spawned writer processes.
Imports nothing: the writers' processes enter through this package before Django is set up.
"""
