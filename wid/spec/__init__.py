"""Window specs and their grammars (the pipeline's first stage, a leaf): each window kind is one
class stating its extent formula and validating in its constructor (:mod:`wid.spec.windows`,
:mod:`wid.spec.aware`, :mod:`wid.spec.spl`, :mod:`wid.spec.flink`), and the grammars that build
them (the paper's clause, SPL clauses). It imports only :mod:`wid.errors` and pyspark, never a
later stage, not even inside a function: each stage finds its own code for a kind.
"""
