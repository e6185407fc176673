/** package.json as the tests read it themselves (not through src/), to check what the node reports. */
import { readFileSync } from 'node:fs';

export const PACKAGE_JSON_PATH = new URL('../../package.json', import.meta.url);

export const PACKAGE_VERSION: string = (JSON.parse(readFileSync(PACKAGE_JSON_PATH, 'utf8')) as { version: string })
  .version;
