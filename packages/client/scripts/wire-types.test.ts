/**
 * The SDK's wire types (packages/client/src/wire.ts) are those of the API's schemas: the file is
 * what the generator writes today (else: `npm run generate:client`), and each type it holds is the
 * schema's TypeBox `Static` type (checked by the compiler: `tsc --noEmit` fails on a difference).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import type { Static } from 'typebox';
import type { TenantPatchInput } from '../../../src/api/schemas/tenants.ts';
import { BATCH_BODY_BYTES_FLOOR, BATCH_EVENTS_CAP, ERROR_STATUS, type WireTypes } from '../src/wire.ts';
import { type SCHEMAS, WIRE_TS_PATH, wireTypesSource } from './wire-types.ts';

/** True when X and Y are the same type (not merely assignable both ways: optional keys count). */
type Same<X, Y> = (<T>() => T extends X ? 1 : 2) extends <T>() => T extends Y ? 1 : 2 ? true : false;
/**
 * Both sides written alike, all the way down: TypeBox's Static nests intersections, and types an
 * object of any keys (`additionalProperties: true`, no properties) as `{}` where the emitter
 * writes what it validates, `{ [key: string]: unknown }`.
 */
type Norm<T> = T extends readonly (infer E)[]
  ? Norm<E>[]
  : T extends object
    ? keyof T extends never
      ? { [key: string]: unknown }
      : { [K in keyof T]: Norm<T[K]> }
    : T;

type Schemas = typeof SCHEMAS;
/**
 * The limits (and what holds them) are built from a table at run time (LIMIT_SPECS), so their
 * Static is a loose record: the wire type, which names each limit, must fit it.
 */
type FromTable = 'LimitsJson' | 'TenantDetailJson' | 'TenantPatchBody';
type Differing = {
  [K in Exclude<keyof Schemas, FromTable>]: Same<Norm<WireTypes[K]>, Norm<Static<Schemas[K]>>> extends true ? never : K;
}[Exclude<keyof Schemas, FromTable>];
const differing: [Differing] extends [never] ? 'none' : Differing = 'none';
const fromTable: { [K in FromTable]: Static<Schemas[K]> } = {} as { [K in FromTable]: WireTypes[K] };
const tenantPatch: TenantPatchInput = {} as WireTypes['TenantPatchBody'];

describe('the wire types of @belfry/client', () => {
  it('are what the generator writes from the schemas today (else run npm run generate:client)', () => {
    assert.equal(readFileSync(WIRE_TS_PATH, 'utf8'), wireTypesSource());
  });

  it('are the Static types of the schemas (a compile-time check)', () => {
    assert.equal(differing, 'none');
    assert.ok(fromTable && tenantPatch);
  });

  it('carry the facts of the API the batching reads', () => {
    assert.equal(ERROR_STATUS.invalid_request, 400);
    assert.equal(ERROR_STATUS.conflict, 409);
    assert.equal(ERROR_STATUS.payload_too_large, 413);
    assert.ok(BATCH_EVENTS_CAP >= 1_000);
    assert.ok(BATCH_BODY_BYTES_FLOOR >= 64 * 1024);
  });
});
