-- 003_claim_leases: one lease per claiming node instead of one per claimed event.
-- A node renews its claims by moving its own row's lease_until; its executing events keep the
-- lease they got when claimed. An executing event is rescued only when both have ended, so a
-- renewal costs one row, not one row per event in flight (tens of thousands in a burst, each a
-- new row version and index entries, rewritten every few seconds).
CREATE TABLE claim_leases (
  owner       text COLLATE "C" PRIMARY KEY,
  lease_until bigint NOT NULL
);
