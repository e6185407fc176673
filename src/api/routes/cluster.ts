/** GET /v1/cluster (admin): nodes, leader and epoch, shards per node, lag per shard. */
import type { FastifyInstance } from 'fastify';
import { BelfryError } from '../../core/errors.ts';
import type { AppDeps } from '../deps.ts';
import { ClusterResponse } from '../schemas/cluster.ts';
import { BEARER_SECURITY, errorResponses } from '../schemas/common.ts';

export function clusterRoutes(app: FastifyInstance, deps: AppDeps): void {
  app.get(
    '/v1/cluster',
    {
      schema: {
        tags: ['admin'],
        summary: 'The cluster: nodes, leader, epoch, shards per node, lag per shard',
        security: BEARER_SECURITY,
        response: { 200: ClusterResponse, ...errorResponses(401, 403, 503) },
      },
    },
    async () => {
      if (!deps.clusterStatus) throw new BelfryError('unavailable', 'cluster status is not available on this node');
      return deps.clusterStatus();
    },
  );
}
