/** Schemas of GET /v1/cluster (admin): the cluster as the answering node sees it. */
import { Type, type Static } from 'typebox';
import { TimeOutput } from './common.ts';

export const ClusterResponse = Type.Object(
  {
    mode: Type.Union([Type.Literal('single'), Type.Literal('cluster')], {
      description: 'single: one node on SQLite owns every shard',
    }),
    nodeId: Type.String({ description: 'the node that answered' }),
    leader: Type.Union([
      Type.Object({ nodeId: Type.String(), epoch: Type.Integer(), expiresAt: TimeOutput }),
      Type.Null(),
    ]),
    shardCount: Type.Integer(),
    unassignedShards: Type.Integer(),
    clockSkewMs: Type.Integer({ description: "the store's clock minus this node's clock" }),
    nodes: Type.Array(
      Type.Object({
        id: Type.String(),
        live: Type.Boolean(),
        heartbeatAgeMs: Type.Integer(),
        shards: Type.Integer(),
        startedAt: TimeOutput,
      }),
    ),
    lag: Type.Array(
      Type.Object({
        shard: Type.Integer(),
        nodeId: Type.Union([Type.String(), Type.Null()]),
        dueEvents: Type.Integer({ description: 'fireable events due by now' }),
        lagMs: Type.Integer({ description: 'how late the oldest of them is' }),
      }),
      { description: 'shards with events already due, the latest first (at most 64)' },
    ),
  },
  { additionalProperties: false },
);
export type ClusterView = Static<typeof ClusterResponse>;
