// The timeline's data as Python sends it (gwatch_nb/serializers.py), and its decoding
// into typed arrays without copying.

export type NumericArray =
  | Uint8Array | Uint16Array | Uint32Array | Int8Array | Int16Array | Int32Array | Float32Array | Float64Array;

/** A numpy array on the wire: raw little-endian bytes plus their dtype. */
export interface BinaryArray {
  dtype: string;
  shape: number[];
  view: DataView | ArrayBuffer | ArrayBufferView;
}

export interface LaunchInfo {
  kernel: string;
  grid: number[];
  block: number[];
  duration_ns: number;
  warps: number;
  instances: number;
  /** The launch's Triton configuration in one line ("" where unknown; absent in older payloads). */
  config?: string;
}

/** One clock reading of the sass tier (gwatch_nb/site_rows.py's record): where it landed in the
 * compiled kernel and how sharp its pair's boundary is. Null where a field does not apply. */
export interface SiteRow {
  kernel: string;
  scope_id: number;
  scope: string;
  site: number;
  kind: string;
  pair: number;
  origin: string;
  line: number | null;
  index: number;
  moved: number;
  store: number;
  instruction: number;
  block: number;
  loop: number | null;
  span: number | null;
  own: number | null;
  other_scopes: number | null;
  unscoped: number | null;
  inferred: number | null;
  sharpness: string | null;
}

export interface Payload {
  version: number;
  tier: string;
  time_source: string;
  launches: LaunchInfo[];
  scopes: { names: string[]; colors: string[] };
  warnings: string[];
  /** Header lines besides warnings: autotuning, then what tracing cost (absent in older payloads). */
  notes?: string[];
  warps: Record<WarpColumn, BinaryArray>;
  instances: Record<InstanceColumn, BinaryArray>;
  /** Sass tier only: every reading, and the rule its sharpness word follows. */
  sites?: { rule: string; rows: SiteRow[] };
  /** Traces made with stalls=True: each scope's stall reasons (trace.stalls' rows). */
  stalls?: { period: number; rows: StallRow[] };
}

/** One kernel, scope and stall reason: its PC samples and share of the scope's samples. */
export interface StallRow {
  kernel: string;
  scope: string;
  reason: string;
  samples: number;
  share: number;
  colour: string;
}

type WarpColumn = "launch" | "sm" | "block_x" | "block_y" | "block_z" | "warp" | "start_ns" | "end_ns" | "first";
type InstanceColumn = "start_ns" | "duration_ns" | "scope" | "depth" | "seq";

/** Per warp, one entry each; instances of warp w are rows first[w] .. first[w+1]. */
export interface WarpTable {
  count: number;
  launch: NumericArray;
  sm: NumericArray;
  blockX: NumericArray;
  blockY: NumericArray;
  blockZ: NumericArray;
  warp: NumericArray;
  startNs: NumericArray;
  endNs: NumericArray; // -1: the warp never exited
  first: NumericArray;
}

/** Per scope instance, in the row order of Trace.df; times in ns from the launch start. */
export interface InstanceTable {
  count: number;
  startNs: NumericArray;
  durationNs: NumericArray;
  scope: NumericArray;
  depth: NumericArray;
  seq: NumericArray;
}

export interface TimelineData {
  tier: string;
  timeSource: string;
  launches: LaunchInfo[];
  scopeNames: string[];
  scopeColors: string[];
  warnings: string[];
  notes: string[];
  warps: WarpTable;
  instances: InstanceTable;
  /** The sass tier's readings (empty on other tiers) and their sharpness rule. */
  sites: SiteRow[];
  sitesRule: string;
  /** Each scope's stall reasons (empty where none were sampled), and the sampling period's exponent. */
  stalls: StallRow[];
  stallPeriod: number;
}

const CONSTRUCTORS: Record<string, { new (buffer: ArrayBuffer, offset: number, length: number): NumericArray; BYTES_PER_ELEMENT: number }> = {
  uint8: Uint8Array, uint16: Uint16Array, uint32: Uint32Array,
  int8: Int8Array, int16: Int16Array, int32: Int32Array,
  float32: Float32Array, float64: Float64Array,
};

/** A typed array over the bytes of `array`, honouring the view's byteOffset. */
export function toTypedArray(array: BinaryArray): NumericArray {
  const Ctor = CONSTRUCTORS[array.dtype];
  if (!Ctor) throw new Error(`gwatch-nb: unsupported dtype ${array.dtype}`);
  const view = array.view;
  const buffer = view instanceof ArrayBuffer ? view : (view.buffer as ArrayBuffer);
  const offset = view instanceof ArrayBuffer ? 0 : view.byteOffset;
  const bytes = view instanceof ArrayBuffer ? view.byteLength : view.byteLength;
  const length = bytes / Ctor.BYTES_PER_ELEMENT;
  if (!Number.isInteger(length)) throw new Error(`gwatch-nb: ${bytes} bytes are not a whole number of ${array.dtype}`);
  if (offset % Ctor.BYTES_PER_ELEMENT === 0) return new Ctor(buffer, offset, length);
  // Typed arrays need aligned offsets; a misaligned view is copied once.
  return new Ctor(buffer.slice(offset, offset + bytes), 0, length);
}

export function decodePayload(payload: Payload): TimelineData {
  if (!payload || payload.version !== 1) throw new Error("gwatch-nb: unsupported timeline data version");
  const w = payload.warps;
  const i = payload.instances;
  const warps: WarpTable = {
    count: 0,
    launch: toTypedArray(w.launch), sm: toTypedArray(w.sm),
    blockX: toTypedArray(w.block_x), blockY: toTypedArray(w.block_y), blockZ: toTypedArray(w.block_z),
    warp: toTypedArray(w.warp), startNs: toTypedArray(w.start_ns), endNs: toTypedArray(w.end_ns),
    first: toTypedArray(w.first),
  };
  warps.count = warps.launch.length;
  const instances: InstanceTable = {
    count: 0,
    startNs: toTypedArray(i.start_ns), durationNs: toTypedArray(i.duration_ns),
    scope: toTypedArray(i.scope), depth: toTypedArray(i.depth), seq: toTypedArray(i.seq),
  };
  instances.count = instances.startNs.length;
  if (warps.first.length !== warps.count + 1 || warps.first[warps.count] !== instances.count) {
    throw new Error("gwatch-nb: warp offsets do not match the scope instances");
  }
  return {
    tier: payload.tier, timeSource: payload.time_source, launches: payload.launches,
    scopeNames: payload.scopes.names, scopeColors: payload.scopes.colors, warnings: payload.warnings,
    notes: payload.notes ?? [], warps, instances,
    sites: payload.sites?.rows ?? [], sitesRule: payload.sites?.rule ?? "",
    stalls: payload.stalls?.rows ?? [], stallPeriod: payload.stalls?.period ?? 0,
  };
}
