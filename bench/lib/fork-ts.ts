/** Forks one of the bench's TypeScript modules as a child process: the tsx loader, the bench's stdout and stderr, and IPC. */
import { fork, type ChildProcess, type ForkOptions } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export function forkTs(module: URL, args: string[] = [], options: Pick<ForkOptions, 'serialization'> = {}): ChildProcess {
  return fork(fileURLToPath(module), args, { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'], ...options });
}
