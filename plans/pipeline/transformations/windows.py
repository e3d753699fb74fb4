"""Python definitions: window queries over the pipeline's readings with wid.

The pipeline analyses nothing inside a query function, and a dataset of the pipeline has no
schema before the pipeline runs; so wid compiles at the top level of this file:

- over the pipeline's own dataset ``readings``: wid.to_sql with its declared columns, the text
  run by spark.sql in the query function;
- over files (or a catalog table), whose schema the top level can read: wid.replay with source=
  and wid.live over a stream of them, their DataFrames returned by the query functions.
"""

from pathlib import Path

from pyspark import pipelines as dp

import wid

DATA = str(Path(__file__).resolve().parent.parent / "data")  # as the Spark Connect server finds it
READINGS = "row_num long, ts timestamp, seg_id string, speed double"
SPEEDS = ("SELECT seg_id, max(speed) AS hi, avg(speed) AS mean, count(*) AS n "
          "FROM readings [RANGE 5 MINUTES SLIDE 1 MINUTE WATTR ts] GROUP BY seg_id")


@dp.temporary_view
def readings():
    return spark.read.csv(f"{DATA}/readings.csv", header=True, schema=READINGS)


SPEED_WINDOWS = wid.to_sql(spark, SPEEDS, schema=READINGS)


@dp.materialized_view
def speed_windows():
    return spark.sql(SPEED_WINDOWS)


# the same readings as files: the late rows of a replay with a slack of 20 s (its results are
# live mode's below; as a flow of its own, their plan nests deeper than pyspark's pipeline client
# copies: docs/guide/pipelines.md)
files = spark.read.csv(f"{DATA}/readings.csv", header=True, schema=READINGS)
replayed = wid.replay(spark, SPEEDS, wid.punctuate.slack(20), source=files)


@dp.materialized_view
def speed_late():
    return replayed.late


# a stream of the files (data/end_of_stream.csv: the end marker, closing every window)
stream = spark.readStream.csv(DATA, header=True, schema=READINGS + ", wid_end boolean")
live = wid.live(spark, SPEEDS, stream, wid.punctuate.slack(20))


@dp.table
def speed_live():
    return live.frame
