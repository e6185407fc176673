/** Forks one of the bench's TypeScript modules as a child process: the tsx loader, the bench's stdout and stderr, and IPC. */
import { fork, type ChildProcess, type ForkOptions } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** The child's first message, or a rejection when it exits first or sends nothing within `msMax`. */
export function firstMessage<T>(child: ChildProcess, what: string, msMax: number): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${what} did not start within ${msMax}ms`)), msMax);
    child.once('exit', (code) => reject(new Error(`${what} exited before ready (code ${code})`)));
    child.once('message', (msg: T) => {
      clearTimeout(timer);
      resolve(msg);
    });
  });
}

export function forkTs(
  module: URL,
  args: string[] = [],
  options: Pick<ForkOptions, 'serialization'> = {},
): ChildProcess {
  return fork(fileURLToPath(module), args, {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    ...options,
  });
}
