/**
 * Typed calls between a thread and the worker threads it starts, over postMessage. A protocol is
 * declared once, as a TypeScript type (method name → function type); the caller side
 * (`RpcClient`) and the worker side (`serveRpc`) are both checked against it.
 *
 *   caller: client.call('m', ...args) ──▶ the calls of one tick, one message ──▶ worker: handlers.m(...args)
 *           promise settled           ◀── replies, one message per batch (or per flush interval) ◀──┘
 *
 * Caller side: a promise per call, ids, at most `inFlightMax` calls unanswered (more are refused
 * at once), errors carried over the wire with their class name, message, stack, `code` and data
 * fields and rebuilt on this side (`rebuildError` maps the classes callers test for), and a
 * thread that dies (an uncaught error, an exit, `fail()`) fails every pending call and every
 * later one. Worker side: each message's calls dispatched by method name, in order one after
 * another (`order: 'sequential'`: each call runs after the one before has settled, batches too)
 * or all at once (`'concurrent'`); replies of a sequential batch go back in one message, those of
 * concurrent calls in one message per `replyFlushMs`. A sequential server may name calls that go
 * `first`: such a call runs as soon as the call running ends, before the calls queued ahead of it
 * (the SQLite store thread's small claims, so an event of a quiet queue does not wait behind a
 * flood's large claims and recordings), and its reply goes back at once.
 *
 * A worker is named by its TypeScript module's URL. Compiled (dist/, as `belfry` runs), `startWorker`
 * starts the module's JavaScript directly; from the sources (tests, through tsx) it starts
 * bin/thread.mjs, which registers the tsx loader first (a worker does not inherit a loader the
 * process registered).
 */
import {
  parentPort as workerParentPort,
  receiveMessageOnPort,
  Worker,
  workerData,
  type MessagePort,
  type TransferListItem,
} from 'node:worker_threads';
import { fileURLToPath } from 'node:url';
import { BelfryError, type ErrorCode, type ErrorDetail } from './errors.ts';

/** A protocol: each method's parameters and result. A handler may return its result or a promise of it. */
export type Protocol = { [method: string]: (...args: never[]) => unknown };
export type Method<P extends Protocol> = keyof P & string;
export type Params<P extends Protocol, M extends Method<P>> = Parameters<P[M]>;
export type Result<P extends Protocol, M extends Method<P>> = Awaited<ReturnType<P[M]>>;
/** The worker's side of a protocol: one handler per method. */
export type Handlers<P extends Protocol> = {
  [M in Method<P>]: (...args: Params<P, M>) => Result<P, M> | Promise<Result<P, M>>;
};

/** One call as it crosses. */
export interface WireCall {
  id: number;
  method: string;
  args: unknown[];
}

export type WireReply = { id: number; result: unknown } | { id: number; error: WireError };

/** An error as it crosses: its class name, message, stack, and the data fields callers read. */
export interface WireError {
  name: string;
  message: string;
  stack?: string;
  code?: unknown;
  details?: ErrorDetail[];
  headers?: Record<string, string>;
}

export function errorToWire(err: unknown): WireError {
  if (!(err instanceof Error)) return { name: 'Error', message: String(err) };
  const e = err as Error & { code?: unknown; details?: ErrorDetail[]; headers?: Record<string, string> };
  return { name: e.name, message: e.message, stack: e.stack, code: e.code, details: e.details, headers: e.headers };
}

/**
 * The error a wire error stands for: BelfryError (the API's), RangeError and TypeError as
 * themselves; any other class as an Error with its name and `code`. The thread's stack is kept,
 * marked with `where`.
 */
export function errorFromWire(w: WireError, where = 'a worker thread'): Error {
  let err: Error;
  if (w.name === 'BelfryError') err = new BelfryError(w.code as ErrorCode, w.message, w.details, w.headers);
  else if (w.name === 'RangeError') err = new RangeError(w.message);
  else if (w.name === 'TypeError') err = new TypeError(w.message);
  else {
    err = new Error(w.message);
    err.name = w.name;
    if (w.code !== undefined) (err as Error & { code?: unknown }).code = w.code;
  }
  return withWireStack(err, w, where);
}

/** Sets `err`'s stack to the thread's, marked with where it ran (the caller's frames follow when rethrown). */
export function withWireStack(err: Error, w: WireError, where: string): Error {
  if (w.stack) err.stack = `${w.stack}\n    --- in ${where}, called from the event loop ---`;
  return err;
}

/** Why the thread can take no more calls. */
export type Death = { exitCode: number } | { error: Error } | { closed: true };

export interface RpcClientOptions {
  /** Calls sent and not yet answered, at most; more are refused with `overloaded()`. Default: no bound. */
  inFlightMax?: number;
  /** The error of a call refused by the bound. */
  overloaded?: () => Error;
  /** The error every pending and later call fails with once the thread is gone. */
  dead?: (why: Death) => Error;
  /** Rebuilds a handler's error (default errorFromWire). */
  rebuildError?: (w: WireError) => Error;
  /** Sees every error a call fails with on the thread (after it is rebuilt). */
  onCallError?: (err: Error) => void;
}

interface Pending {
  resolve(value: unknown): void;
  reject(err: Error): void;
}

const defaultDead = (why: Death): Error =>
  'exitCode' in why
    ? new Error(`worker thread exited (code ${why.exitCode})`)
    : 'error' in why
      ? new Error(`worker thread failed: ${why.error.message}`, { cause: why.error })
      : new Error('worker thread: closed');

/** The caller's side: calls to one worker thread, batched per tick. */
export class RpcClient<P extends Protocol> {
  private readonly pending = new Map<number, Pending>();
  private outbox: WireCall[] = [];
  private transfer: TransferListItem[] = [];
  private nextId = 1;
  private deadError: Error | null = null;
  private readonly inFlightMax: number;
  private readonly options: RpcClientOptions;
  onCallError: ((err: Error) => void) | null;

  constructor(
    /** The worker thread (or a port to one, in tests). */
    readonly worker: Worker,
    options: RpcClientOptions = {},
  ) {
    this.options = options;
    this.inFlightMax = options.inFlightMax ?? Number.POSITIVE_INFINITY;
    this.onCallError = options.onCallError ?? null;
    worker.on('message', (replies: WireReply[]) => this.settle(replies));
    worker.on('error', (error: Error) => this.fail({ error }));
    worker.on('exit', (exitCode: number) => this.fail({ exitCode }));
  }

  /** Calls sent (or about to be) and not yet answered. */
  get inFlight(): number {
    return this.pending.size;
  }

  /** The error calls fail with once the thread is gone, or null while it runs. */
  get dead(): Error | null {
    return this.deadError;
  }

  /**
   * Calls `method` on the thread. The calls of one tick go in one message, run there in the order
   * made. `transfer` moves buffers instead of copying them (they are unusable here afterwards).
   */
  call<M extends Method<P>>(method: M, ...args: Params<P, M>): Promise<Result<P, M>> {
    return this.send(method, args) as Promise<Result<P, M>>;
  }

  /** call() with a transfer list: `transfer` holds buffers found in `args`, moved rather than copied. */
  callTransferring<M extends Method<P>>(
    method: M,
    transfer: readonly TransferListItem[],
    ...args: Params<P, M>
  ): Promise<Result<P, M>> {
    return this.send(method, args, transfer) as Promise<Result<P, M>>;
  }

  /** call() by a method name known only at run time (a forwarding table checked elsewhere). */
  send(method: string, args: unknown[], transfer?: readonly TransferListItem[]): Promise<unknown> {
    if (this.deadError) return Promise.reject(this.deadError);
    if (this.pending.size >= this.inFlightMax) {
      return Promise.reject(
        this.options.overloaded?.() ?? new Error(`worker thread: ${this.inFlightMax} calls already waiting`),
      );
    }
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      if (this.outbox.length === 0) queueMicrotask(() => this.flush());
      this.outbox.push({ id, method, args });
      if (transfer) this.transfer.push(...transfer);
    });
  }

  /** Sends the calls made so far now, not at the end of the tick. */
  flush(): void {
    const calls = this.outbox;
    if (calls.length === 0) return;
    const transfer = this.transfer;
    this.outbox = [];
    this.transfer = [];
    if (this.deadError) return;
    try {
      this.worker.postMessage(calls, transfer);
    } catch {
      // One call's arguments cannot be cloned (a function, a class the structured clone refuses):
      // that call fails, the others go one by one (copied, not moved).
      for (const call of calls) {
        try {
          this.worker.postMessage([call]);
        } catch (err) {
          const p = this.pending.get(call.id);
          this.pending.delete(call.id);
          p?.reject(err as Error);
        }
      }
    }
  }

  /** Fails every pending call and every later one with the error `why` makes; first reason wins. */
  fail(why: Death): void {
    if (this.deadError) return;
    const err = (this.options.dead ?? defaultDead)(why);
    this.deadError = err;
    this.outbox = [];
    this.transfer = [];
    for (const p of this.pending.values()) p.reject(err);
    this.pending.clear();
  }

  /** Fails what is pending (as closed) and ends the thread. */
  async terminate(): Promise<void> {
    this.fail({ closed: true });
    await this.worker.terminate();
  }

  private settle(replies: WireReply[]): void {
    for (const reply of replies) {
      const p = this.pending.get(reply.id);
      if (!p) continue;
      this.pending.delete(reply.id);
      if ('error' in reply) {
        const err = (this.options.rebuildError ?? errorFromWire)(reply.error);
        this.onCallError?.(err);
        p.reject(err);
      } else p.resolve(reply.result);
    }
  }
}

export interface ServeOptions {
  /** 'sequential': each call after the one before has settled (batches in the order received); 'concurrent': all at once. */
  order: 'sequential' | 'concurrent';
  /**
   * Sequential calls only: the calls that run before those queued ahead of them (as soon as the
   * call running ends), given their method and arguments. Keep it to cheap calls: the others wait
   * for every one of them that arrives meanwhile.
   */
  first?: (method: string, args: readonly unknown[]) => boolean;
  /** Concurrent calls only: replies settled within this long travel in one message (default: those of one turn of the loop). */
  replyFlushMs?: number;
  /** The port to serve (default the worker's parentPort). */
  port?: MessagePort;
}

export interface RpcServer {
  /** Sends the replies not yet sent, then closes the port: the thread exits once nothing else keeps it. */
  close(): void;
}

/** The worker's side: answers the calls that arrive on `port` with `handlers`. */
export function serveRpc<P extends Protocol>(handlers: Handlers<P>, options: ServeOptions): RpcServer {
  const port = options.port ?? workerParentPort;
  if (!port) throw new Error('serveRpc: not on a worker thread');
  const table = handlers as unknown as Record<string, (...args: unknown[]) => unknown>;
  let outbox: WireReply[] = [];
  let closed = false;
  const post = (replies: WireReply[]) => {
    if (replies.length === 0 || closed) return;
    try {
      port.postMessage(replies);
    } catch {
      // A result that cannot be cloned fails its own call only.
      for (const r of replies) {
        try {
          port.postMessage([r]);
        } catch (err) {
          port.postMessage([{ id: r.id, error: errorToWire(err) }]);
        }
      }
    }
  };
  const run = (call: WireCall): unknown => {
    const handler = Object.hasOwn(table, call.method) ? table[call.method] : undefined;
    if (!handler) throw new Error(`no method "${call.method}" on this thread`);
    return handler(...call.args);
  };
  const runToReply = async (call: WireCall): Promise<WireReply> => {
    try {
      return { id: call.id, result: await run(call) };
    } catch (err) {
      return { id: call.id, error: errorToWire(err) };
    }
  };

  if (options.order === 'sequential') {
    // Calls wait in two lines: those that go `first`, and the rest in the order received. With a
    // `first` rule, before each call the port's messages that arrived meanwhile are taken in
    // (receiveMessageOnPort), so a call to go first that came in while a long one ran is the next
    // to run; without one, messages come in as the port delivers them, between calls.
    const { first } = options;
    const firstLine: WireCall[] = [];
    const line: { call: WireCall; lastOfBatch: boolean }[] = [];
    let running = false;
    const goesFirst = (call: WireCall): boolean => {
      try {
        return first !== undefined && first(call.method, call.args);
      } catch {
        return false;
      }
    };
    const take = (calls: WireCall[]) => {
      const rest: WireCall[] = [];
      for (const call of calls) (goesFirst(call) ? firstLine : rest).push(call);
      rest.forEach((call, i) => line.push({ call, lastOfBatch: i === rest.length - 1 }));
    };
    const pump = async (): Promise<void> => {
      running = true;
      let replies: WireReply[] = [];
      for (;;) {
        if (first)
          for (let m = receiveMessageOnPort(port); m; m = receiveMessageOnPort(port)) take(m.message as WireCall[]);
        const urgent = firstLine.shift();
        if (urgent) {
          replies.push(await runToReply(urgent));
          post(replies);
          replies = [];
          continue;
        }
        const next = line.shift();
        if (!next) break;
        replies.push(await runToReply(next.call));
        // The replies of a batch go back together.
        if (next.lastOfBatch) {
          post(replies);
          replies = [];
        }
      }
      post(replies);
      running = false;
    };
    port.on('message', (calls: WireCall[]) => {
      take(calls);
      if (!running) void pump();
    });
  } else {
    const flushMs = options.replyFlushMs ?? 0;
    const flush = () => {
      const out = outbox;
      outbox = [];
      post(out);
    };
    const reply = (r: WireReply) => {
      if (outbox.length === 0) {
        if (flushMs > 0) setTimeout(flush, flushMs);
        else setImmediate(flush);
      }
      outbox.push(r);
    };
    port.on('message', (calls: WireCall[]) => {
      for (const call of calls) {
        let result: unknown;
        try {
          result = run(call);
        } catch (err) {
          reply({ id: call.id, error: errorToWire(err) });
          continue;
        }
        Promise.resolve(result).then(
          (value) => reply({ id: call.id, result: value }),
          (err: unknown) => reply({ id: call.id, error: errorToWire(err) }),
        );
      }
    });
  }

  return {
    close() {
      const out = outbox;
      outbox = [];
      post(out);
      closed = true;
      port.close();
    },
  };
}

/**
 * Whether this code runs compiled (dist/, `.js`) or from its TypeScript sources through tsx.
 * Compiling rewrites import specifiers, not the module URLs named here, so `moduleUrl` maps them.
 */
const COMPILED = import.meta.url.endsWith('.js');

/** The URL of the code of `url`, a TypeScript module: its compiled `.js` when this runs compiled. */
function moduleUrl(url: URL): URL {
  return COMPILED ? new URL(url.href.replace(/\.ts$/, '.js')) : url;
}

/**
 * Running from the sources, the entry of every worker thread and child process (bin/thread.mjs):
 * it registers the tsx loader, then imports the TypeScript module it is given. Named by its path,
 * not imported: core/ loads nothing outside itself.
 */
const THREAD_ENTRY = new URL('../../bin/thread.mjs', import.meta.url);

/** Starts the TypeScript module at `url` on a worker thread; `data` is its threadData(). */
export function startWorker(url: URL, data?: unknown): Worker {
  const workerData = { module: url.href, data };
  return COMPILED ? new Worker(moduleUrl(url), { workerData }) : new Worker(THREAD_ENTRY, { workerData });
}

/**
 * The arguments of `node` that run the TypeScript module at `url` as a process of its own, with
 * `args` as its own arguments (process.argv.slice(2) there).
 */
export function childProcessArgs(url: URL, args: string[]): string[] {
  return COMPILED ? [fileURLToPath(moduleUrl(url)), ...args] : [fileURLToPath(THREAD_ENTRY), url.href, ...args];
}

/** On a thread startWorker started: the `data` it was given. */
export function threadData<T>(): T {
  return (workerData as { data: T }).data;
}
