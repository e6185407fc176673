-- 005_tenant_signing_secrets: each tenant's own signing secrets, for its deliveries to inline
-- URLs (as on PostgreSQL; see its 005). JSON text, newest first; '[]' for tenants made before.
ALTER TABLE tenants ADD COLUMN signing_secrets TEXT NOT NULL DEFAULT '[]';
