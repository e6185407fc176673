/** `belfry cluster status`: GET /v1/cluster (admin): nodes, leader, epoch, shards per node, lag per shard. */
import { ApiClient } from './client.ts';
import { COMMON_OPTIONS, commonUsage, parseCommandLine, printJson, type Command } from './command.ts';
import { cell, msCell, renderFields, renderTable, timeCell } from './table.ts';

const usage = `Usage: belfry cluster status [options]

Shows the cluster as the answering node sees it: the leader and its epoch, every node with its
heartbeat age and number of shards, and the shards whose due events are late (GET /v1/cluster).

Options:
${commonUsage('BELFRY_ADMIN_KEY')}`;

export interface ClusterView {
  mode: string;
  nodeId: string;
  leader: { nodeId: string; epoch: number; expiresAt: string } | null;
  shardCount: number;
  unassignedShards: number;
  clockSkewMs: number;
  nodes: { id: string; live: boolean; heartbeatAgeMs: number; shards: number; startedAt: string }[];
  lag: { shard: number; nodeId: string | null; dueEvents: number; lagMs: number }[];
}

export const clusterStatus: Command = {
  usage,
  async run(argv, io) {
    const { values } = parseCommandLine({ args: argv, options: COMMON_OPTIONS, allowPositionals: false });
    const client = ApiClient.fromFlags(values, 'admin', io);
    const response = await client.request('GET', '/v1/cluster');
    if (values.json) return printJson(io, response.body);
    const c = response.body as ClusterView;
    io.out(
      renderFields([
        ['mode', c.mode],
        ['answered by', c.nodeId],
        [
          'leader',
          c.leader
            ? `${c.leader.nodeId} (epoch ${c.leader.epoch}, lease until ${timeCell(c.leader.expiresAt)})`
            : 'none',
        ],
        ['shards', `${c.shardCount} (${c.unassignedShards} unassigned)`],
        ['clock skew', msCell(c.clockSkewMs)],
      ]),
    );
    io.out('');
    io.out(
      renderTable(
        ['NODE', 'LIVE', 'HEARTBEAT AGE', 'SHARDS', 'STARTED'],
        c.nodes.map((n) => [
          cell(n.id) + (c.leader?.nodeId === n.id ? ' *' : ''),
          n.live ? 'yes' : 'no',
          msCell(n.heartbeatAgeMs),
          String(n.shards),
          timeCell(n.startedAt),
        ]),
      ),
    );
    if (c.lag.length > 0) {
      io.out('');
      io.out(
        renderTable(
          ['SHARD', 'OWNER', 'DUE EVENTS', 'LAG'],
          c.lag.map((l) => [String(l.shard), cell(l.nodeId ?? '-'), String(l.dueEvents), msCell(l.lagMs)]),
        ),
      );
    } else {
      io.out('\nno shard has late events');
    }
  },
};
