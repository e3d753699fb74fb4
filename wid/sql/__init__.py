"""The SQL surface: window-id functions and window-query views in Spark SQL
(:mod:`~wid.sql.views`: :func:`wid.register`, :func:`wid.run_sql`), a window query as plain
Spark SQL text (:func:`wid.to_sql`), the persistent catalog, ``wid sql`` and ``wid serve``
(Spark's Thrift JDBC server). It imports the compiler and the stages below.
"""
