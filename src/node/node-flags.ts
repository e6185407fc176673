/**
 * Node's own flags a Belfry node runs with. `bin/belfry.mjs` names them in its shebang and
 * `npm start` on its command line (a flag that sizes the heap takes effect only at the process's
 * start, not from inside it); test/support/process.ts starts every node process of the tests and
 * the benchmark with them; node-flags.test.ts keeps the three the same.
 *
 * --max-semi-space-size=32: the young generation's semi-spaces at 32 MiB instead of V8's 16. A
 * batch of 1,000 events allocates a few MB of short-lived objects (the parsed body, the records,
 * the answer), and with the default each one paid for scavenges of its own. Measured on this
 * machine, alternating, the node started by the benchmark: batch ingest on SQLite 53,900-58,300
 * events/s (24-25 µs of node CPU per event) without, 61,300-66,400/s (21-23 µs) with; fire
 * 100,000 on SQLite 13,200-14,500 deliveries/s (109-118 µs per event) without, 15,000-15,400/s
 * (102-104 µs) with. At most 48 MiB more memory (three semi-spaces of 16 MiB more).
 */
export const NODE_FLAGS: readonly string[] = ['--max-semi-space-size=32'];
