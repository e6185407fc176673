/**
 * One delivery's undici dispatch handler: collects the final status, the headers of a non-2xx
 * answer and at most `bodyBytesMax` of its body, and settles `done` once.
 *
 * Why not undici's request(): it wraps every response in a Readable stream, an AsyncResource and
 * an AbortSignal listener, and the body is then read through an async iterator. Webhook answers
 * are tiny and read only for a reason snippet; at 10,000 deliveries/s that machinery (streams,
 * nextTick, abort signals) took about a tenth of the node's CPU.
 *
 *   dispatch ─▶ onRequestStart(controller) ─▶ onResponseStart (1xx skipped) ─▶ onResponseData*
 *            ─▶ onResponseEnd ─▶ settled;   any step ─▶ onResponseError ─▶ settled
 *   abort(reason) (timeout, caller) ─▶ settled at once; undici aborts the request as soon as it can
 *
 * (undici's handler API of v8: the controller aborts; the headers come parsed.)
 *
 * The whole body is read so the socket can be reused; past `drainBytesMax` the connection is
 * dropped instead, and the answer settles with what was read.
 */
import type { Dispatcher } from 'undici';

/** Response headers as undici parses them (lower-case names; a repeated header as an array). */
export type ResponseHeaders = Record<string, string | string[] | undefined>;

/** What came back: a final status (with its headers and a snippet), or a failure. */
export type Exchange =
  | { kind: 'response'; status: number; headers: ResponseHeaders | null; snippet: string; bodyError: Error | null }
  | { kind: 'failure'; error: Error };

export class ResponseCollector implements Dispatcher.DispatchHandler {
  readonly done: Promise<Exchange>;
  private settle!: (exchange: Exchange) => void;
  private settled = false;
  private controller: Dispatcher.DispatchController | null = null;
  private abortReason: Error | null = null;
  private status = 0;
  private headers: ResponseHeaders | null = null;
  private keepBytesMax = 0;
  private kept: Buffer[] = [];
  private keptBytes = 0;
  private totalBytes = 0;

  constructor(
    private readonly bodyBytesMax: number,
    private readonly drainBytesMax: number,
  ) {
    this.done = new Promise((resolve) => {
      this.settle = resolve;
    });
  }

  /**
   * Ends the exchange now, as if undici had failed with `reason` (a body cut short after the
   * headers still answers with the status), and aborts the request.
   */
  abort(reason: Error): void {
    this.fail(reason);
    if (this.controller) this.controller.abort(reason);
    else this.abortReason ??= reason;
  }

  /** The request failed before undici took it (dispatch threw). */
  fail(err: Error): void {
    if (this.status !== 0) this.finishResponse(err);
    else this.finish({ kind: 'failure', error: err });
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    if (this.abortReason) controller.abort(this.abortReason);
    else this.controller = controller;
  }

  onResponseStart(_controller: Dispatcher.DispatchController, statusCode: number, headers: ResponseHeaders): void {
    // 1xx (100 Continue, 103 Early Hints) are informational: the final answer follows.
    if (statusCode < 200) return;
    this.status = statusCode;
    const ok = statusCode < 300;
    // A 2xx is judged by its status alone: its headers and body are not kept.
    this.headers = ok ? null : headers;
    this.keepBytesMax = ok ? 0 : this.bodyBytesMax;
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    this.totalBytes += chunk.length;
    if (this.keptBytes < this.keepBytesMax) {
      const part = chunk.subarray(0, this.keepBytesMax - this.keptBytes);
      this.kept.push(part);
      this.keptBytes += part.length;
    }
    if (this.totalBytes > this.drainBytesMax) {
      // Too long to drain: answer with what was read, and drop this connection.
      this.finishResponse(null);
      controller.abort(new Error(`response body longer than ${this.drainBytesMax} bytes`));
    }
  }

  onResponseEnd(): void {
    this.finishResponse(null);
  }

  onResponseError(_controller: Dispatcher.DispatchController | null, err: Error): void {
    this.fail(err);
  }

  private finishResponse(bodyError: Error | null): void {
    const snippet = this.keptBytes === 0 ? '' : Buffer.concat(this.kept).toString('utf8');
    this.finish({ kind: 'response', status: this.status, headers: this.headers, snippet, bodyError });
  }

  private finish(exchange: Exchange): void {
    if (this.settled) return;
    this.settled = true;
    this.kept = [];
    this.settle(exchange);
  }
}
