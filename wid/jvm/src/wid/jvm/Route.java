package wid.jvm;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Comparator;
import java.util.List;

import org.apache.spark.api.java.function.MapPartitionsFunction;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.types.StructType;

/**
 * The elements of a partition as they are, and per chunk of them the marks every other bucket
 * needs: the chunk's tuples that carry a record of a spread column (above every earlier tuple of
 * the chunk in row_num order) and its last tuple, as mark rows (row_num, the spread columns,
 * kind 1) to every other bucket. What wid.stream.live.input.pack sends them, in the same pass
 * over the elements (no second read of the tuples).
 */
final class Route implements MapPartitionsFunction<Row, Row> {
  static final int CHUNK = 8192;
  private final int width, bucket, kind, rowNum, buckets;
  private final int[] spread;  // the spread columns' places among the elements' columns

  Route(StructType schema, int bucket, int kind, int rowNum, int buckets, int[] spread) {
    this.width = schema.size(); this.bucket = bucket; this.kind = kind; this.rowNum = rowNum;
    this.buckets = buckets; this.spread = spread;
  }

  @Override
  public java.util.Iterator<Row> call(java.util.Iterator<Row> input) {
    return new java.util.Iterator<Row>() {
      private java.util.Iterator<Row> chunk = Collections.emptyIterator();

      @Override
      public boolean hasNext() {
        while (!chunk.hasNext() && input.hasNext()) chunk = routed(input).iterator();
        return chunk.hasNext();
      }

      @Override
      public Row next() {
        if (!hasNext()) throw new java.util.NoSuchElementException();
        return chunk.next();
      }
    };
  }

  /** The next chunk of elements, then the marks of its tuples. */
  private List<Row> routed(java.util.Iterator<Row> input) {
    ArrayList<Row> out = new ArrayList<>(CHUNK + 64);
    ArrayList<Row> tuples = new ArrayList<>();
    while (out.size() < CHUNK && input.hasNext()) {
      Row r = input.next();
      out.add(r);
      if (r.getInt(kind) == PaneStep.TUPLE) tuples.add(r);
    }
    tuples.sort(Comparator.comparingLong(r -> r.getLong(rowNum)));
    long[] high = new long[spread.length];
    Arrays.fill(high, PaneStep.NONE);
    for (int t = 0; t < tuples.size(); t++) {
      Row r = tuples.get(t);
      boolean record = t == tuples.size() - 1;
      for (int i = 0; i < spread.length; i++) {
        if (!r.isNullAt(spread[i]) && r.getLong(spread[i]) > high[i]) {
          record = true;
          high[i] = r.getLong(spread[i]);
        }
      }
      if (!record) continue;
      for (int b = 0; b < buckets; b++) {
        if (b == r.getInt(bucket)) continue;
        Object[] mark = new Object[width];
        mark[rowNum] = r.get(rowNum);
        mark[bucket] = b;
        mark[kind] = PaneStep.MARK;
        for (int s : spread) mark[s] = r.get(s);
        out.add(RowFactory.create(mark));
      }
    }
    return out;
  }
}
