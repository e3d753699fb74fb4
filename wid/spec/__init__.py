"""Window kinds and their grammars: the paper's clause, SPL clauses, Flink policies."""
