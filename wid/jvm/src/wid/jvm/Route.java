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
 * Per chunk of a partition of tuples (bucket, row_num, the spread columns), the tuples that carry
 * a record of a spread column (above every earlier tuple of the chunk in row_num order) and the
 * chunk's last tuple, as mark rows of the elements' schema (row_num, the spread columns, kind 1)
 * to every other bucket: what wid.stream.live.input.pack sends them.
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
        while (!chunk.hasNext() && input.hasNext()) chunk = marksOf(input).iterator();
        return chunk.hasNext();
      }

      @Override
      public Row next() {
        if (!hasNext()) throw new java.util.NoSuchElementException();
        return chunk.next();
      }
    };
  }

  /** The marks of the next chunk of tuples (narrow rows: bucket, row_num, spread columns). */
  private List<Row> marksOf(java.util.Iterator<Row> input) {
    ArrayList<Row> tuples = new ArrayList<>();
    while (tuples.size() < CHUNK && input.hasNext()) tuples.add(input.next());
    tuples.sort(Comparator.comparingLong(r -> r.getLong(1)));
    long[] high = new long[spread.length];
    Arrays.fill(high, PaneStep.NONE);
    ArrayList<Row> out = new ArrayList<>();
    for (int t = 0; t < tuples.size(); t++) {
      Row r = tuples.get(t);
      boolean record = t == tuples.size() - 1;
      for (int i = 0; i < spread.length; i++) {
        if (!r.isNullAt(i + 2) && r.getLong(i + 2) > high[i]) {
          record = true;
          high[i] = r.getLong(i + 2);
        }
      }
      if (!record) continue;
      for (int b = 0; b < buckets; b++) {
        if (b == r.getInt(0)) continue;
        Object[] mark = new Object[width];
        mark[rowNum] = r.get(1);
        mark[bucket] = b;
        mark[kind] = PaneStep.MARK;
        for (int i = 0; i < spread.length; i++) mark[spread[i]] = r.get(i + 2);
        out.add(RowFactory.create(mark));
      }
    }
    return out;
  }
}
