--! Previous: sha1:6dd70ce8e5aa88229ed1a26fd584212458918204
--! Hash: sha1:646a5559cb2e4c44445481c0c3d7e6c91c87bb35
--! Message: A webhook's author is kept like every record's author (NO ACTION, not SET NULL): the schema distributes with Citus

-- A webhook's author is kept the way every other record's author is. Citus (README "Scaling
-- out") refuses ON DELETE SET NULL in a foreign key that includes the distribution column
-- (tenant_id), and users are disabled, never deleted (their history keeps them). NO ACTION is
-- checked at the end of the statement, so deleting a whole tenant still cascades through both.
alter table weld_hidden.webhooks drop constraint if exists webhooks_tenant_id_created_by_fkey;
alter table weld_hidden.webhooks
  add constraint webhooks_tenant_id_created_by_fkey
  foreign key (tenant_id, created_by) references weld_public.users;
