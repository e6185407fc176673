-- 005_tenant_signing_secrets: each tenant's own signing secrets. They sign its deliveries to
-- inline URLs (an event's {"url": ...} destination), as a destination's secrets sign deliveries
-- to it: newest first, [{"secret": "whsec_...", "expiresAt": ms | null}], as destinations.secrets.
-- Tenants made before this migration have none ('[]'); the dispatcher generates one at their
-- first inline delivery, so no delivery goes out unsigned. tenantGet and tenantList never read
-- this column: only tenantSecretsGet does. (A constant default: no table rewrite.)
ALTER TABLE tenants ADD COLUMN signing_secrets jsonb NOT NULL DEFAULT '[]';
