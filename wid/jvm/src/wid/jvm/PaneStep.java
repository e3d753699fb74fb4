package wid.jvm;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.io.Serializable;
import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.spark.sql.Column;
import org.apache.spark.sql.functions;
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
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructType;

/**
 * Live mode's pane step on the JVM: the same step as wid.stream.live.state.PaneProcessor (its
 * module doc states it), per hash bucket and micro-batch, window-agnostic: it sees row_num, a
 * kind (0 tuple, 1 mark, 2 punctuation, 3 end), keys, wid_lo/wid_hi, values and wid_closed,
 * never the window spec. The layout comes as JSON (wid.stream.live.jvm.layout_json); the
 * bucket's state is one value-state cell (a serialized {@link Bucket}), read and written once per
 * micro-batch. A check that fails throws an IllegalArgumentException whose message starts with
 * "wid: " (live_run names it as a WidError).
 */
public final class PaneStep extends StatefulProcessor<Integer, Row, Row> {
  static final int TUPLE = 0, MARK = 1, PUNCTUATION = 2, END = 3;
  static final long NONE = Long.MIN_VALUE, OPEN = Long.MAX_VALUE - 1;
  static final int SUM = 0, MIN = 1, MAX = 2;
  static final int COUNT = 0, VALUE = 1, LONG_SUM = 2, DOUBLE_SUM = 3, DECIMAL_SUM = 4;
  static final String STATE_KEY = "_wid_state_key";
  static final int NOTHING = 0, KIND = 1, KEY = 2, PARTIAL = 3, WINDOW = 4, EMIT = 5, PAYLOAD = 6;

  /** The bucket's state: panes, the bound table, pending marks, ROWS counts, the last element, top. */
  static final class Bucket implements Serializable {
    private static final long serialVersionUID = 1L;
    String layout;
    HashMap<List<Object>, Object[]> panes = new HashMap<>();
    HashMap<List<Object>, Long> bounds = new HashMap<>();
    ArrayList<long[]> pending = new ArrayList<>();
    HashMap<List<Object>, Long> counts = new HashMap<>();
    long[] last;  // row_num, kind, high (NONE: none)
    long top = NONE;
  }

  /** An element of the batch: its row, row_num and kind, read once (the order sorts on them). */
  /** A place in the stream's order: row_num, then kind (a tuple before a punctuation at one row_num). */
  abstract static class Placed {
    final long rowNum;
    final int kind;
    Placed(long rowNum, int kind) { this.rowNum = rowNum; this.kind = kind; }

    /** Two places in (row_num, kind) order. */
    static int order(Placed a, Placed b) {
      return a.rowNum != b.rowNum ? Long.compare(a.rowNum, b.rowNum) : Integer.compare(a.kind, b.kind);
    }
  }

  static final class Event extends Placed {
    final Row row;
    Event(Row row, long rowNum, int kind) { super(rowNum, kind); this.row = row; }
  }

  /** A tuple of the batch with its range and own punctuation (null: none). */
  static final class Tuple {
    final Row row;
    final long rowNum;
    long lo, hi;
    Long closed;
    long c = NONE;
    Tuple(Event e) { this.row = e.row; this.rowNum = e.rowNum; }
  }

  /** A punctuation: row_num, kind (for the order), pattern values, the windows it closes. */
  static final class Punctuation extends Placed {
    final Object[] values;
    final long closed;
    Punctuation(long rowNum, int kind, Object[] values, long closed) {
      super(rowNum, kind); this.values = values; this.closed = closed;
    }
  }

  private final String layoutJson;
  private final StructType output;
  private final int rowNum, kind, lo, hi, closed, kept;
  private final int[] keys, payload, pattern, present, patternKey;
  private final boolean[][] shapes;  // per shape: which pattern columns it binds
  private final boolean wildcard, own, onAll, consistent, open;
  private final long shift;
  private final String[] how, type;
  private final int[] arg;
  private final long[] tagLo, tagHi, tagClosed;
  private final int[] merge;  // per partial: SUM (also counts), MIN or MAX
  private final int[] start;  // per partial, its value from one tuple: COUNT, VALUE or a sum's type
  private final int[] resultFrom, resultAt, lateFrom, lateAt;  // per output column: its source and index
  private transient ValueState<byte[]> state;

  public PaneStep(String json) throws IOException {
    JsonNode c = new ObjectMapper().readTree(json);
    layoutJson = json;
    output = (StructType) DataType.fromJson(c.get("output").toString());
    rowNum = c.get("row_num").asInt(); kind = c.get("kind").asInt(); lo = c.get("lo").asInt();
    hi = c.get("hi").asInt(); closed = c.get("closed").asInt(); kept = c.get("kept").asInt();
    keys = ints(c.get("keys")); payload = ints(c.get("payload")); pattern = ints(c.get("pattern"));
    present = ints(c.get("present")); patternKey = ints(c.get("pattern_key"));
    JsonNode s = c.get("shapes");
    shapes = new boolean[s.size()][pattern.length];
    for (int i = 0; i < s.size(); i++) for (JsonNode p : s.get(i)) shapes[i][p.asInt()] = true;
    wildcard = c.get("wildcard").asBoolean(); own = c.get("own").asBoolean(); onAll = c.get("on_all").asBoolean();
    consistent = c.get("consistent").asBoolean(); open = c.get("open").asBoolean(); shift = c.get("shift").asLong();
    JsonNode parts = c.get("partials");
    how = new String[parts.size()]; type = new String[parts.size()]; arg = new int[parts.size()];
    merge = new int[parts.size()]; start = new int[parts.size()];
    for (int i = 0; i < parts.size(); i++) {
      how[i] = parts.get(i).get("how").asText(); type[i] = parts.get(i).get("type").asText();
      arg[i] = parts.get(i).get("arg").asInt();
      merge[i] = how[i].equals("min") ? MIN : how[i].equals("max") ? MAX : SUM;
      start[i] = how[i].equals("count") ? COUNT : !how[i].equals("sum") ? VALUE
          : type[i].equals("long") ? LONG_SUM : type[i].equals("double") ? DOUBLE_SUM : DECIMAL_SUM;
    }
    JsonNode t = c.get("tagger");
    tagLo = t.isNull() ? null : longs(t.get("lo"));
    tagHi = t.isNull() ? null : longs(t.get("hi"));
    tagClosed = t.isNull() ? null : longs(t.get("closed"));
    String[] result = strings(c.get("result")), late = strings(c.get("late"));
    resultFrom = new int[result.length]; resultAt = new int[result.length];
    for (int i = 0; i < result.length; i++) {
      String from = result[i];
      resultFrom[i] = from == null ? NOTHING : from.equals("kind") ? KIND : from.charAt(0) == 'k' ? KEY
          : from.charAt(0) == 'a' ? PARTIAL : from.equals("w") ? WINDOW : EMIT;
      resultAt[i] = resultFrom[i] == KEY || resultFrom[i] == PARTIAL ? Integer.parseInt(from.substring(1)) : -1;
    }
    lateFrom = new int[late.length]; lateAt = new int[late.length];
    for (int i = 0; i < late.length; i++) {
      String from = late[i];
      lateFrom[i] = from == null ? NOTHING : from.equals("kind") ? KIND : from.charAt(0) == 'p' ? PAYLOAD : WINDOW;
      lateAt[i] = lateFrom[i] == PAYLOAD ? payload[Integer.parseInt(from.substring(1))] : -1;
    }
  }

  /**
   * The step over {@code elements} (bucket numbers 0 .. n - 1, the layout's "bucket_keys" their
   * state keys: each bucket a partition of its own): its output rows. The layout's "spread": the
   * places of the columns every bucket needs the records of (empty: none); {@link Route} passes
   * the elements through and sends those records to the other buckets as marks.
   */
  public static Dataset<Row> apply(Dataset<Row> elements, String json) throws IOException {
    PaneStep step = new PaneStep(json);
    JsonNode c = new ObjectMapper().readTree(json);
    int bucket = c.get("bucket").asInt();
    int[] keys = ints(c.get("bucket_keys")), spread = ints(c.get("spread"));
    Dataset<Row> routed = spread.length == 0 || keys.length < 2 ? elements : elements.mapPartitions(
        new Route(elements.schema(), bucket, step.kind, step.rowNum, keys.length, spread),
        Encoders.row(elements.schema()));
    Column[] stateKeys = new Column[keys.length];
    for (int i = 0; i < keys.length; i++) stateKeys[i] = functions.lit(keys[i]);
    Column stateKey = functions.element_at(functions.array(stateKeys), routed.col(routed.columns()[bucket]).plus(1));
    Dataset<Row> keyed = routed.withColumn(STATE_KEY, stateKey);  // a column: no row decoded to find its key
    return keyed.groupBy(keyed.col(STATE_KEY)).as(Encoders.INT(), Encoders.row(keyed.schema()))
        .transformWithState(step, TimeMode.None(), OutputMode.Append(), Encoders.row(step.output));
  }

  @Override
  public void init(OutputMode outputMode, TimeMode timeMode) {
    state = getHandle().getValueState("bucket", Encoders.BINARY(), TTLConfig.NONE());
  }

  @Override
  public scala.collection.Iterator<Row> handleInputRows(Integer key, scala.collection.Iterator<Row> rows,
                                                        TimerValues timerValues) {
    ArrayList<Event> events = new ArrayList<>();
    while (rows.hasNext()) {
      Row r = rows.next();
      if (r.isNullAt(rowNum)) throw wid("a tuple or punctuation with a NULL row_num: arrival order needs one");
      events.add(new Event(r, r.getLong(rowNum), r.getInt(kind)));
    }
    ArrayList<Row> out = new ArrayList<>();
    if (!events.isEmpty()) {
      Bucket b = load();
      step(b, events, out);
      store(b);
    }
    return scala.jdk.javaapi.CollectionConverters.asScala(out.iterator());
  }

  private void step(Bucket b, ArrayList<Event> events, List<Row> out) {
    events.sort(Placed::order);
    boolean end = false;
    for (Event e : events) end |= e.kind == END;
    List<Punctuation> due = sequence(b, events, end);
    ArrayList<Tuple> tuples = new ArrayList<>();
    for (Event e : events) {
      if (e.kind != TUPLE) continue;
      Row r = e.row;
      Tuple t = new Tuple(e);
      t.lo = r.isNullAt(lo) ? 0 : r.getLong(lo);
      t.hi = r.isNullAt(hi) ? 0 : r.getLong(hi);
      t.closed = r.isNullAt(closed) ? null : r.getLong(closed);
      tuples.add(t);
    }
    if (tagLo != null) tuples = positioned(b, tuples);
    if (open) {
      ArrayList<Tuple> keptOnes = new ArrayList<>();
      for (Tuple t : tuples) if (isKept(t.row)) { t.hi = OPEN; keptOnes.add(t); }
      tuples = keptOnes;
    }
    ArrayList<Punctuation> punctuations = new ArrayList<>();
    for (Event e : events) {
      if (e.kind == PUNCTUATION && !e.row.isNullAt(closed)) {
        punctuations.add(new Punctuation(e.rowNum, PUNCTUATION, patternOf(e.row), e.row.getLong(closed)));
      }
    }
    punctuations.addAll(due);
    if (own) {
      for (Tuple t : tuples) {
        if (t.closed != null) punctuations.add(new Punctuation(t.rowNum, TUPLE, patternOf(t.row), t.closed));
      }
    }
    punctuations.sort(Placed::order);
    long top = open ? top(b, events, punctuations) : NONE;
    advance(b, tuples, punctuations, end, top, out);
  }

  /** Steps 1 and 2: the order check, the last element, marks on all keys due as punctuations. */
  private List<Punctuation> sequence(Bucket b, List<Event> events, boolean end) {
    Event head = events.get(0);
    long headRow = head.rowNum;
    if (b.last != null && b.last[1] == END) throw wid("row_num " + headRow + " arrives after the end-of-stream marker");
    if (b.last != null && (headRow < b.last[0] || (headRow == b.last[0] && head.kind <= b.last[1]))) {
      throw wid("row_num " + headRow + " arrives after row_num " + b.last[0]
          + " of an earlier micro-batch (row_num must not go backwards)");
    }
    int ends = 0;
    for (Event e : events) ends += e.kind == END ? 1 : 0;
    if (ends > 1 || (ends == 1 && events.get(events.size() - 1).kind != END)) {
      throw wid("the end-of-stream marker must be the last element of the stream");
    }
    long high = b.last == null ? NONE : b.last[2];
    ArrayList<Punctuation> due = new ArrayList<>();
    if (onAll) {
      List<long[]> candidates = candidates(b.pending, events);
      long reached = events.get(events.size() - 1).rowNum;
      long before = high;
      ArrayList<long[]> waiting = new ArrayList<>();
      for (long[] m : candidates) {
        if (m[1] > before) {
          if (m[0] <= reached || end) {
            due.add(new Punctuation(m[0], PUNCTUATION, new Object[2 * pattern.length], m[1]));
            high = Math.max(high, m[1]);
          } else {
            waiting.add(m);
          }
        }
        before = Math.max(before, m[1]);
      }
      b.pending = waiting;
    }
    Event tail = events.get(events.size() - 1);
    b.last = new long[] {tail.rowNum, tail.kind, high};
    return due;
  }

  /**
   * The marks that may punctuate, (row_num + shift, closed) in that order: the pending ones
   * (in order), then, at an equal place, the batch's tuples and marks that raise the largest
   * closed of the batch's earlier ones (one that does not can never raise the bound: an earlier
   * one at no later place already reached it).
   */
  private List<long[]> candidates(List<long[]> pending, List<Event> events) {
    ArrayList<long[]> raising = new ArrayList<>();
    long top = NONE;
    for (Event e : events) {
      if (e.kind <= MARK && !e.row.isNullAt(closed) && e.row.getLong(closed) > top) {
        top = e.row.getLong(closed);
        raising.add(new long[] {e.rowNum + shift, top});
      }
    }
    ArrayList<long[]> out = new ArrayList<>(pending.size() + raising.size());
    int i = 0, j = 0;
    while (i < pending.size() || j < raising.size()) {
      boolean fromPending = j == raising.size() || (i < pending.size() && pending.get(i)[0] <= raising.get(j)[0]);
      out.add(fromPending ? pending.get(i++) : raising.get(j++));
    }
    return out;
  }

  /** ROWS windows: positions per partition (the pattern), ids and the implied punctuation. */
  private ArrayList<Tuple> positioned(Bucket b, List<Tuple> tuples) {
    HashMap<List<Object>, Boolean> seen = new HashMap<>();
    for (Tuple t : tuples) {
      List<Object> id = new ArrayList<>(Arrays.asList(patternOf(t.row)));
      id.add(t.rowNum);
      if (seen.put(id, Boolean.TRUE) != null) {
        throw wid("duplicate row_num=" + t.rowNum + ": arrival order needs a unique row_num");
      }
    }
    ArrayList<Tuple> out = new ArrayList<>();
    long period = tagLo.length;
    for (Tuple t : tuples) {
      List<Object> part = Arrays.asList(patternOf(t.row));
      long x = b.counts.getOrDefault(part, 0L);
      b.counts.put(new ArrayList<>(part), x + 1);
      long n = Math.floorDiv(x, period);
      int m = (int) (x - n * period);
      t.lo = tagLo[m] + n; t.hi = tagHi[m] + n; t.closed = tagClosed[m] + n;
      if (t.lo <= t.hi && isKept(t.row)) out.add(t);
    }
    return out;
  }

  /** Open ranges: the largest wid_lo so far; a punctuation beyond it at its arrival is an error. */
  private long top(Bucket b, List<Event> events, List<Punctuation> punctuations) {
    long running = b.top;
    int i = 0;
    for (Punctuation p : punctuations) {
      for (; i < events.size() && events.get(i).rowNum <= p.rowNum; i++) running = raise(running, events.get(i));
      if (p.closed > running) {
        throw wid("a punctuation at row_num " + p.rowNum + " closes window " + p.closed + " of a landmark window, "
            + "beyond the stream's largest window so far (" + running + "): live mode cannot tell which of them the "
            + "rest of the stream opens (replay it, or punctuate from the data: slack, ordered_by, heartbeat on the "
            + "data clock)");
      }
    }
    for (; i < events.size(); i++) running = raise(running, events.get(i));
    b.top = running;
    return running;
  }

  private long raise(long running, Event e) {
    return e.kind <= MARK && !e.row.isNullAt(lo) ? Math.max(running, e.row.getLong(lo)) : running;
  }

  /** Steps 3 and 4: C per tuple, late rows and panes, the windows the batch closes. */
  private void advance(Bucket b, List<Tuple> tuples, List<Punctuation> punctuations, boolean end, long top,
                       List<Row> out) {
    int ti = 0, pi = 0;
    boolean unpatterned = pattern.length == 0;  // one bound for all tuples: kept, not looked up per tuple
    long bound = unpatterned ? closedFor(b.bounds, new Object[0]) : NONE;
    while (ti < tuples.size() || pi < punctuations.size()) {  // tuples first at equal (row_num, kind)
      boolean tupleNext = pi == punctuations.size() || (ti < tuples.size() && !before(punctuations.get(pi), tuples.get(ti)));
      if (tupleNext) {
        Tuple t = tuples.get(ti++);
        t.c = unpatterned ? bound : closedFor(b.bounds, patternOf(t.row));
      } else {
        Punctuation p = punctuations.get(pi++);
        for (int sid = 0; sid < shapes.length; sid++) {
          if (inShape(p.values, sid)) b.bounds.merge(boundKey(sid, p.values), p.closed, Math::max);
        }
        if (unpatterned) bound = closedFor(b.bounds, p.values);
      }
    }
    for (Tuple t : tuples) {
      boolean late = t.c >= t.lo;
      long onLo = consistent ? (late ? t.hi + 1 : t.lo) : Math.max(t.lo, t.c == NONE ? NONE : t.c + 1);
      long lateHi = consistent ? t.hi : Math.min(t.hi, t.c);
      if (late) for (long w = t.lo; w <= lateHi; w++) out.add(lateRow(t.row, w));
      if (onLo <= t.hi) {
        List<Object> pane = keysOf(t.row);
        pane.add(onLo);
        pane.add(t.hi);
        Object[] had = b.panes.get(pane);
        if (had == null) b.panes.put(pane, tuplePartials(t.row)); else combine(had, tuplePartials(t.row));
      }
    }
    int k = keys.length;
    HashMap<List<Object>, ArrayList<Map.Entry<List<Object>, Object[]>>> byKey = new HashMap<>();
    for (Map.Entry<List<Object>, Object[]> e : b.panes.entrySet()) {
      byKey.computeIfAbsent(new ArrayList<>(e.getKey().subList(0, k)), x -> new ArrayList<>()).add(e);
    }
    Map<List<Object>, long[][]> firsts = firsts(punctuations);
    HashMap<List<Object>, Object[]> left = new HashMap<>();
    for (Map.Entry<List<Object>, ArrayList<Map.Entry<List<Object>, Object[]>>> g : byKey.entrySet()) {
      List<Object> key = g.getKey();
      Object[] values = patternOfKeys(key);
      long closedHere = end ? Long.MAX_VALUE : closedFor(b.bounds, values);
      ArrayList<Span> spans = new ArrayList<>();
      ArrayList<Map.Entry<List<Object>, Object[]>> cuts = new ArrayList<>();
      for (Map.Entry<List<Object>, Object[]> e : g.getValue()) {
        long pLo = (Long) e.getKey().get(k), pHi = (Long) e.getKey().get(k + 1);
        long upTo = open && pHi == OPEN ? Math.min(closedHere, top) : closedHere;
        long last = Math.min(pHi, upTo);
        if (last >= pLo) spans.add(new Span(pLo, last, e.getValue()));
        if (!end && pHi > upTo) {
          List<Object> cut = new ArrayList<>(key);
          cut.add(Math.max(pLo, last + 1));
          cut.add(pHi);
          cuts.add(Map.entry(cut, e.getValue()));
        }
      }
      sweep(key, spans, runsOf(firsts, values), out);
      for (Map.Entry<List<Object>, Object[]> cut : cuts) left.merge(cut.getKey(), cut.getValue(), this::combine);
    }
    b.panes = left;
  }

  /** A pane's windows that close now, {@code lo .. last}, and its partials. */
  static final class Span {
    final long lo, last;
    final Object[] partials;
    Span(long lo, long last, Object[] partials) { this.lo = lo; this.last = last; this.partials = partials; }
  }

  /**
   * The windows of one key's closing panes, in id order: window w merges the spans holding it
   * (lo <= w <= last). One sweep over the ids the spans cover, each span entering at its lo and
   * leaving after its last: no window is looked up in a map.
   */
  private void sweep(List<Object> key, ArrayList<Span> spans, long[][][] runs, List<Row> out) {
    spans.sort(Comparator.comparingLong((Span s) -> s.lo));
    ArrayList<Span> active = new ArrayList<>();
    int next = 0;
    long w = Long.MIN_VALUE;
    while (next < spans.size() || !active.isEmpty()) {
      if (active.isEmpty()) w = Math.max(w, spans.get(next).lo);
      while (next < spans.size() && spans.get(next).lo <= w) active.add(spans.get(next++));
      final long at = w;
      active.removeIf(s -> s.last < at);
      if (active.isEmpty()) continue;
      out.add(resultRow(key, w, emitRow(runs, w), fold(active)));
      if (w == Long.MAX_VALUE) break;
      w++;
    }
  }

  /** The punctuation comes before the tuple in (row_num, kind) order (a tuple first at equal ones). */
  private boolean before(Punctuation p, Tuple t) {
    long r = t.rowNum;
    return p.rowNum < r || (p.rowNum == r && p.kind < TUPLE);
  }

  /** The largest window closed for pattern values {@code values}, over all shapes (NONE: none). */
  private long closedFor(Map<List<Object>, Long> bounds, Object[] values) {
    long c = NONE;
    for (int sid = 0; sid < shapes.length; sid++) {
      Long v = bounds.get(boundKey(sid, values));
      if (v != null) c = Math.max(c, v);
    }
    return c;
  }

  /** A punctuation's pattern values bind exactly shape {@code sid} (every shape when NULL is no wildcard). */
  private boolean inShape(Object[] values, int sid) {
    if (!wildcard) return true;
    for (int i = 0; i < pattern.length; i++) {
      if ((values[pattern.length + i] != null) != shapes[sid][i]) return false;
    }
    return true;
  }

  /** The bound table's key: the shape and its pattern values (NULL for the columns it does not bind). */
  private List<Object> boundKey(int sid, Object[] values) {
    List<Object> key = new ArrayList<>(pattern.length + 1);
    key.add(sid);
    for (int i = 0; i < pattern.length; i++) key.add(!wildcard || shapes[sid][i] ? values[i] : null);
    return key;
  }

  /** A row's pattern values, then whether each is bound (the column that tells it non-NULL). */
  private Object[] patternOf(Row r) {
    Object[] out = new Object[2 * pattern.length];
    for (int i = 0; i < pattern.length; i++) {
      out[i] = plain(r.get(pattern[i]));
      out[pattern.length + i] = r.isNullAt(present[i]) ? null : Boolean.TRUE;
    }
    return out;
  }

  /** A pane's or window's pattern values, from its keys. */
  private Object[] patternOfKeys(List<Object> keyed) {
    Object[] out = new Object[2 * pattern.length];
    for (int i = 0; i < pattern.length; i++) out[i] = keyed.get(patternKey[i]);
    return out;
  }

  private List<Object> keysOf(Row r) {
    List<Object> out = new ArrayList<>(keys.length + 2);
    for (int i : keys) out.add(plain(r.get(i)));
    return out;
  }

  /** A key value as a group sees it: -0.0 is 0.0 (Spark's GROUP BY). */
  private static Object plain(Object v) {
    if (v instanceof Double && (Double) v == 0.0) return 0.0;
    if (v instanceof Float && (Float) v == 0.0f) return 0.0f;
    return v;
  }

  private boolean isKept(Row r) {
    return kept < 0 || (!r.isNullAt(kept) && r.getBoolean(kept));
  }

  /** The partials of a one-tuple pane: a NaN value is left out as a NULL is (counted apart by its flag). */
  private Object[] tuplePartials(Row r) {
    Object[] out = new Object[how.length];
    for (int i = 0; i < how.length; i++) {
      Object v = arg[i] < 0 ? Long.valueOf(1) : r.get(arg[i]);
      if ((v instanceof Double && ((Double) v).isNaN()) || (v instanceof Float && ((Float) v).isNaN())) v = null;
      if (start[i] == COUNT) {
        out[i] = v == null ? 0L : 1L;
      } else if (v == null || start[i] == VALUE) {
        out[i] = v;
      } else if (start[i] == LONG_SUM) {
        out[i] = ((Number) v).longValue();
      } else if (start[i] == DOUBLE_SUM) {
        out[i] = ((Number) v).doubleValue();
      } else {
        out[i] = v instanceof BigDecimal ? v : new BigDecimal(v.toString());
      }
    }
    return out;
  }

  /** Partials merged into {@code a} (a pane's own array): sums (NULL only when both are), min, max. */
  private Object[] combine(Object[] a, Object[] b) {
    for (int i = 0; i < how.length; i++) a[i] = merged(i, a[i], b[i]);
    return a;
  }

  /** The partials of spans merged, in a new array. */
  private Object[] fold(List<Span> spans) {
    Object[] out = new Object[how.length];
    for (int i = 0; i < how.length; i++) {
      Object v = null;
      for (Span s : spans) v = merged(i, v, s.partials[i]);
      out[i] = v;
    }
    return out;
  }

  /** Partial {@code i} of two panes merged (NULL only when both are). */
  private Object merged(int i, Object x, Object y) {
    if (x == null || y == null) return x == null ? y : x;
    switch (merge[i]) {
      case MIN: return compare(y, x) < 0 ? y : x;
      case MAX: return compare(y, x) > 0 ? y : x;
      default:
        if (x instanceof Long) return (Long) x + (Long) y;
        if (x instanceof Double) return (Double) x + (Double) y;
        return ((BigDecimal) x).add((BigDecimal) y);
    }
  }

  /** Spark's order: strings by code point (UTF-8 bytes), other values by their own order. */
  @SuppressWarnings("unchecked")
  private static int compare(Object x, Object y) {
    if (x instanceof String) {
      String a = (String) x, b = (String) y;
      int i = 0, j = 0;
      while (i < a.length() && j < b.length()) {
        int ca = a.codePointAt(i), cb = b.codePointAt(j);
        if (ca != cb) return Integer.compare(ca, cb);
        i += Character.charCount(ca);
        j += Character.charCount(cb);
      }
      return Integer.compare(a.length() - i, b.length() - j);
    }
    if (x instanceof Double) return ((Double) x).compareTo((Double) y);
    return ((Comparable<Object>) x).compareTo(y);
  }

  /** Per shape and pattern values: the batch's punctuations raising the running bound, (bound, row_num). */
  private Map<List<Object>, long[][]> firsts(List<Punctuation> punctuations) {
    HashMap<List<Object>, ArrayList<long[]>> runs = new HashMap<>();
    for (Punctuation p : punctuations) {
      for (int sid = 0; sid < shapes.length; sid++) {
        if (!inShape(p.values, sid)) continue;
        ArrayList<long[]> run = runs.computeIfAbsent(boundKey(sid, p.values), x -> new ArrayList<>());
        if (run.isEmpty() || p.closed > run.get(run.size() - 1)[0]) run.add(new long[] {p.closed, p.rowNum});
      }
    }
    HashMap<List<Object>, long[][]> out = new HashMap<>();
    runs.forEach((key, run) -> out.put(key, run.toArray(new long[0][])));
    return out;
  }

  /** Per shape, the batch's punctuations that raise the bound of these pattern values (null: none). */
  private long[][][] runsOf(Map<List<Object>, long[][]> firsts, Object[] values) {
    long[][][] out = new long[shapes.length][][];
    for (int sid = 0; sid < shapes.length; sid++) out[sid] = firsts.get(boundKey(sid, values));
    return out;
  }

  /** The row_num of the batch's first punctuation closing window {@code w} (of {@link #runsOf}); null: none. */
  private static Long emitRow(long[][][] runs, long w) {
    Long best = null;
    for (long[][] run : runs) {
      if (run == null) continue;
      int a = 0, z = run.length;
      while (a < z) {
        int m = (a + z) >>> 1;
        if (run[m][0] >= w) z = m; else a = m + 1;
      }
      if (a < run.length && (best == null || run[a][1] < best)) best = run[a][1];
    }
    return best;
  }

  private Row resultRow(List<Object> key, long w, Long emit, Object[] partials) {
    Object[] values = new Object[resultFrom.length];
    for (int i = 0; i < values.length; i++) {
      switch (resultFrom[i]) {
        case KIND: values[i] = "result"; break;
        case KEY: values[i] = key.get(resultAt[i]); break;
        case PARTIAL: values[i] = partials[resultAt[i]]; break;
        case WINDOW: values[i] = w; break;
        case EMIT: values[i] = emit; break;
        default: break;
      }
    }
    return RowFactory.create(values);
  }

  private Row lateRow(Row r, long w) {
    Object[] values = new Object[lateFrom.length];
    for (int i = 0; i < values.length; i++) {
      switch (lateFrom[i]) {
        case KIND: values[i] = "late"; break;
        case PAYLOAD: values[i] = r.get(lateAt[i]); break;
        case WINDOW: values[i] = w; break;
        default: break;
      }
    }
    return RowFactory.create(values);
  }

  private Bucket load() {
    if (!state.exists()) {
      Bucket b = new Bucket();
      b.layout = layoutJson;
      return b;
    }
    try (ObjectInputStream in = new ObjectInputStream(new ByteArrayInputStream(state.get()))) {
      Bucket b = (Bucket) in.readObject();
      if (!layoutJson.equals(b.layout)) {
        throw wid("the checkpoint's state has another layout (written by another query or an older wid): "
            + "start the query with a fresh checkpoint");
      }
      return b;
    } catch (IOException | ClassNotFoundException e) {
      throw wid("the checkpoint's state cannot be read (written by another query or an older wid): "
          + "start the query with a fresh checkpoint");
    }
  }

  private void store(Bucket b) {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (ObjectOutputStream o = new ObjectOutputStream(bytes)) {
      o.writeObject(b);
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
    state.update(bytes.toByteArray());
  }

  private static IllegalArgumentException wid(String message) {
    return new IllegalArgumentException("wid: " + message);
  }

  private static int[] ints(JsonNode a) {
    int[] out = new int[a.size()];
    for (int i = 0; i < out.length; i++) out[i] = a.get(i).asInt();
    return out;
  }

  private static long[] longs(JsonNode a) {
    long[] out = new long[a.size()];
    for (int i = 0; i < out.length; i++) out[i] = a.get(i).asLong();
    return out;
  }

  private static String[] strings(JsonNode a) {
    String[] out = new String[a.size()];
    for (int i = 0; i < out.length; i++) out[i] = a.get(i).isNull() ? null : a.get(i).asText();
    return out;
  }
}
