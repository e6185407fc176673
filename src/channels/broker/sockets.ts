/** Sockets that die with a signal: how a broker connection is destroyed at once, whatever its state. */
import type net from 'node:net';

/**
 * Destroys `socket` when `signal` aborts (at once if it already has). Not net / tls.connect's own
 * `signal` option: on Node 20 a TLS socket aborted that way mid-handshake can keep its TCP handle
 * open, and the process aborts when that handle later reads the peer's close.
 */
export function dieWith(socket: net.Socket, signal: AbortSignal | undefined, withError = false): void {
  if (!signal) return;
  // With an error, for clients that listen for 'error' and not 'close' (KafkaJS fails the
  // requests in flight on it; on a plain destroy they would wait for their own timeout). The
  // socket must have an 'error' listener.
  const kill = () => socket.destroy(withError ? new Error('connection closed by Belfry') : undefined);
  if (signal.aborted) {
    process.nextTick(kill);
    return;
  }
  signal.addEventListener('abort', kill, { once: true });
  socket.once('close', () => signal.removeEventListener('abort', kill));
}
