/** Sockets that die with a signal: how a broker connection is destroyed at once, whatever its state. */
import type net from 'node:net';

/**
 * Destroys `socket` when `signal` aborts (at once if it already has). Not net / tls.connect's own
 * `signal` option: on Node 20 a TLS socket aborted that way mid-handshake can keep its TCP handle
 * open, and the process aborts when that handle later reads the peer's close.
 */
export function dieWith(socket: net.Socket, signal: AbortSignal | undefined): void {
  if (!signal) return;
  if (signal.aborted) {
    process.nextTick(() => socket.destroy());
    return;
  }
  const kill = () => socket.destroy();
  signal.addEventListener('abort', kill, { once: true });
  socket.once('close', () => signal.removeEventListener('abort', kill));
}
