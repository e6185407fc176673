/** A proxy that loses an answer: for the SDK's tests of idempotent retries. */
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A loopback proxy in front of the node that lets the first `METHOD /path` request reach the node,
 * then cuts the connection instead of passing the answer back: the client cannot know it went through.
 */
export async function startAnswerDroppingProxy(
  nodeUrl: string,
  which: string,
): Promise<{ url: string; bodies: string[]; close(): Promise<void> }> {
  const bodies: string[] = [];
  const target = new URL(nodeUrl);
  const proxy: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const matches = `${req.method} ${req.url}` === which;
      if (matches) bodies.push(body.toString());
      const upstream = httpRequest(
        { host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers },
        (up) => {
          const upChunks: Buffer[] = [];
          up.on('data', (c: Buffer) => upChunks.push(c));
          up.on('end', () => {
            if (matches && bodies.length === 1) return req.socket.destroy();
            res.writeHead(up.statusCode!, up.headers).end(Buffer.concat(upChunks));
          });
        },
      );
      upstream.end(body);
    });
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`,
    bodies,
    close() {
      proxy.closeAllConnections();
      return new Promise<void>((resolve) => proxy.close(() => resolve()));
    },
  };
}
