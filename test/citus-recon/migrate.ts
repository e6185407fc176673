import { openPostgresStore } from '../../src/store/postgres/postgres-store.ts';
const url = process.argv[2];
const schema = process.argv[3] ?? 'belfry_plain';
try {
  const store = await openPostgresStore({ url, schema });
  console.log('migrated OK into', schema);
  await store.close();
} catch (err) {
  console.log('migrate FAILED:', (err as Error).message, (err as { code?: string }).code);
  process.exitCode = 1;
}
