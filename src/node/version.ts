/**
 * Belfry's version, read from its package.json when first asked (never a copy kept in the code,
 * so a release changes one place): `belfry --version`, `/healthz`, `belfry_build_info` and the
 * OpenAPI document show it.
 */
import { readFileSync } from 'node:fs';

const PACKAGE_JSON = new URL('../../package.json', import.meta.url);

let cached: string | null = null;

/** The `version` of the package.json at the root of this installation. */
export function belfryVersion(): string {
  if (cached !== null) return cached;
  const { version } = JSON.parse(readFileSync(PACKAGE_JSON, 'utf8')) as { version?: unknown };
  if (typeof version !== 'string' || version === '') throw new Error(`no version in ${PACKAGE_JSON.pathname}`);
  cached = version;
  return version;
}

/** The store kind a `store` setting names, as `belfry_build_info` labels it. */
export function storeKindOf(store: string): 'sqlite' | 'postgres' {
  return store === 'sqlite' ? 'sqlite' : 'postgres';
}
