package wid.jvm;

import java.util.Collections;

import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.streaming.OutputMode;
import org.apache.spark.sql.streaming.StatefulProcessor;
import org.apache.spark.sql.streaming.TTLConfig;
import org.apache.spark.sql.streaming.TimeMode;
import org.apache.spark.sql.streaming.TimerValues;
import org.apache.spark.sql.streaming.ValueState;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

/**
 * The floor of a stateful step that sees every row, for wid bench --live: each row goes through
 * the shuffle into transformWithState to the state key of its bucket, as PaneStep's elements
 * do, and is read and counted; the bucket's running count is its state (one RocksDB value, as
 * PaneStep's), its output one row per bucket and micro-batch. No step over every row, as wid's
 * must be to place each tuple against the punctuations that arrived before it, runs faster.
 */
public final class CountStep extends StatefulProcessor<Integer, Row, Row> {
  static final StructType OUTPUT = new StructType().add("bucket", DataTypes.IntegerType).add("rows", DataTypes.LongType);
  private transient ValueState<Long> count;

  /** {@code rows} counted per value of its int column {@code bucket}: (bucket, rows so far). */
  public static Dataset<Row> apply(Dataset<Row> rows, String bucket) {
    return rows.groupBy(rows.col(bucket)).as(Encoders.INT(), Encoders.row(rows.schema()))
        .transformWithState(new CountStep(), TimeMode.None(), OutputMode.Append(), Encoders.row(OUTPUT));
  }

  @Override
  public void init(OutputMode outputMode, TimeMode timeMode) {
    count = getHandle().getValueState("count", Encoders.LONG(), TTLConfig.NONE());
  }

  @Override
  public scala.collection.Iterator<Row> handleInputRows(Integer key, scala.collection.Iterator<Row> rows,
                                                        TimerValues timerValues) {
    long n = count.exists() ? count.get() : 0L;
    while (rows.hasNext()) {
      rows.next();
      n++;
    }
    count.update(n);
    return scala.jdk.javaapi.CollectionConverters.asScala(Collections.singletonList(RowFactory.create(key, n)).iterator());
  }
}
