"""Window specs and their grammars (the pipeline's first stage, a leaf): each window kind is one
class stating its extent formula and validating in its constructor (:mod:`wid.windows.context_free`,
:mod:`wid.windows.aware`, :mod:`wid.windows.spl`, :mod:`wid.windows.flink`), and the grammars that build
them (the paper's clause, SPL clauses). It imports only :mod:`wid.errors` and pyspark, never a
later stage, not even inside a function: each stage finds its own code for a kind.
"""
