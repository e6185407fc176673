/**
 * A real Kafka-protocol cluster on loopback for tests: librdkafka's mock cluster (Debian's
 * librdkafka-dev; `.ci/run` installs it when missing), started by a small C launcher
 * (mock-cluster.c) compiled here with gcc into the gitignored .tmp/ directory, once per source
 * change. The cluster lives until stop() or until this process dies (its stdin closes).
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, renameSync, statSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const SOURCE = fileURLToPath(new URL('./mock-cluster.c', import.meta.url));
const BUILD_DIR = fileURLToPath(new URL('../../../.tmp/kafka-mock/', import.meta.url));
const BINARY = `${BUILD_DIR}mock-cluster`;
const START_MS_MAX = 15_000;
const COMMAND_MS_MAX = 10_000;

/** Compiles the launcher unless a binary newer than its source is there (atomic: parallel tests may race). */
export async function buildMockCluster(): Promise<string> {
  if (existsSync(BINARY) && statSync(BINARY).mtimeMs >= statSync(SOURCE).mtimeMs) return BINARY;
  mkdirSync(BUILD_DIR, { recursive: true });
  const partial = `${BINARY}.${process.pid}`;
  await promisify(execFile)('gcc', ['-O1', '-o', partial, SOURCE, '-lrdkafka']);
  renameSync(partial, BINARY);
  return BINARY;
}

export interface MockKafka {
  /** `host:port,...` of the cluster's brokers. */
  bootstrap: string;
  createTopic(name: string, partitions: number): Promise<void>;
  /** The broker closes its connections and refuses new ones, until brokerUp. */
  brokerDown(id: number): Promise<void>;
  brokerUp(id: number): Promise<void>;
  /** Metadata of the topic answers this Kafka error code (29: topic authorisation failed). */
  topicError(name: string, code: number): Promise<void>;
  /** The broker answers every request `ms` later (0: at once): a broker that stops answering in time. */
  brokerRtt(id: number, ms: number): Promise<void>;
  stop(): Promise<void>;
}

export async function startMockKafka(brokers = 1): Promise<MockKafka> {
  const binary = await buildMockCluster();
  const child: ChildProcess = spawn(binary, [String(brokers)], { stdio: ['pipe', 'pipe', 'inherit'] });
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  const lines = createInterface({ input: child.stdout! });
  const waiting: ((line: string) => void)[] = [];
  lines.on('line', (line) => waiting.shift()?.(line));
  const nextLine = (what: string, ms: number) =>
    new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`mock kafka: no answer to ${what} within ${ms} ms`)), ms);
      waiting.push((line) => {
        clearTimeout(timer);
        resolve(line);
      });
    });
  let first: string;
  try {
    first = await nextLine('start', START_MS_MAX);
  } catch (err) {
    child.kill('SIGKILL');
    throw err;
  }
  const bootstrap = first.replace(/^bootstrap /, '').trim();
  const command = async (line: string) => {
    const answer = nextLine(line, COMMAND_MS_MAX);
    child.stdin!.write(`${line}\n`);
    const got = await answer;
    if (got !== 'ok') throw new Error(`mock kafka: ${line}: ${got}`);
  };
  return {
    bootstrap,
    createTopic: (name, partitions) => command(`topic ${name} ${partitions}`),
    brokerDown: (id) => command(`down ${id}`),
    brokerUp: (id) => command(`up ${id}`),
    topicError: (name, code) => command(`error ${name} ${code}`),
    brokerRtt: (id, ms) => command(`rtt ${id} ${ms}`),
    async stop() {
      child.stdin!.end();
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    },
  };
}
