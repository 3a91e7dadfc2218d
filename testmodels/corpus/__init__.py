"""The real-model conformance corpus of issue 17 (docs/conformance.md, "Real models").

build.py lists and builds it (cached); truth.py records what the engines do with each model
(truth.json); tests/test_conformance_corpus.py scores graphlint's errors against that truth.
"""
