-- 003_claim_leases: one lease per claiming node instead of one per claimed event (as on
-- PostgreSQL; see its 003). An executing event is rescued only when its own lease (from its
-- claim) and its owner's lease have both ended.
CREATE TABLE claim_leases (
  owner       TEXT PRIMARY KEY,
  lease_until INTEGER NOT NULL
) WITHOUT ROWID;
