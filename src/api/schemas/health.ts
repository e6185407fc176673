/** Schemas of the operational routes: liveness and readiness. */
import { Type } from 'typebox';

export const HealthResponse = Type.Object({
  status: Type.Literal('ok'),
  version: Type.String({ description: "Belfry's version, e.g. 0.2.0" }),
});

export const ReadyResponse = Type.Object({
  status: Type.Union([Type.Literal('ready'), Type.Literal('not_ready')]),
  reasons: Type.Array(Type.String()),
});
