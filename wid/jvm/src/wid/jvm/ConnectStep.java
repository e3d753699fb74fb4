package wid.jvm;

import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;

import org.apache.spark.connect.proto.Relation;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.connect.planner.SparkConnectPlanner;
import org.apache.spark.sql.connect.plugin.RelationPlugin;

/**
 * The pane step on a Spark Connect server: a relation plugin
 * (spark.connect.extensions.relation.classes=wid.jvm.ConnectStep, with the jar on the server's
 * spark.jars). The client (wid.jvm.connect) sends a Relation whose extension is a
 * google.protobuf.Any of type {@link #TYPE}; its value holds, as protobuf fields, 1: the elements
 * (a Relation), 2: the layout JSON. The plugin plans the relation and returns the plan of
 * {@link PaneStep#apply}. Any other extension is left to the next plugin.
 */
public final class ConnectStep implements RelationPlugin {
  static final String TYPE = "type.googleapis.com/wid.PaneStep";

  @Override
  public Optional<LogicalPlan> transform(byte[] relation, SparkConnectPlanner planner) {
    Map<Integer, byte[]> any = fields(relation);  // google.protobuf.Any: 1 type_url, 2 value
    if (!TYPE.equals(new String(any.getOrDefault(1, new byte[0]), StandardCharsets.UTF_8))) return Optional.empty();
    Map<Integer, byte[]> step = fields(any.getOrDefault(2, new byte[0]));
    try {
      Dataset<Row> elements = planned(planner, step.get(1));
      Dataset<Row> out = PaneStep.apply(elements, new String(step.get(2), StandardCharsets.UTF_8));
      return Optional.of(((org.apache.spark.sql.classic.Dataset<Row>) out).logicalPlan());
    } catch (java.io.IOException e) {
      throw new IllegalArgumentException("wid: the pane step's layout cannot be read: " + e.getMessage(), e);
    }
  }

  /** A Relation's bytes, planned by the server as any relation of the client's. */
  private static Dataset<Row> planned(SparkConnectPlanner planner, byte[] relation) {
    try {
      LogicalPlan plan = planner.transformRelation(Relation.parseFrom(relation));
      return org.apache.spark.sql.classic.Dataset.ofRows(planner.session(), plan);
    } catch (RuntimeException e) {
      throw e;
    } catch (Exception e) {  // the (shaded) protobuf's parse error
      throw new IllegalArgumentException("wid: the pane step's relation cannot be read: " + e.getMessage(), e);
    }
  }

  /** The length-delimited fields of a protobuf message (wire type 2), by field number; others skipped. */
  static Map<Integer, byte[]> fields(byte[] message) {
    Map<Integer, byte[]> out = new HashMap<>();
    int[] at = {0};
    while (at[0] < message.length) {
      long tag = varint(message, at);
      int wire = (int) (tag & 7);
      if (wire == 2) {
        int length = (int) varint(message, at);
        byte[] value = new byte[length];
        System.arraycopy(message, at[0], value, 0, length);
        at[0] += length;
        out.put((int) (tag >>> 3), value);
      } else if (wire == 0) {
        varint(message, at);
      } else if (wire == 1 || wire == 5) {
        at[0] += wire == 1 ? 8 : 4;
      } else {
        throw new IllegalArgumentException("wid: the pane step's relation is no protobuf message this step reads");
      }
    }
    return out;
  }

  private static long varint(byte[] message, int[] at) {
    long value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      byte b = message[at[0]++];
      value |= (long) (b & 0x7f) << shift;
      if ((b & 0x80) == 0) return value;
    }
    throw new IllegalArgumentException("wid: a malformed varint in the pane step's relation");
  }
}
