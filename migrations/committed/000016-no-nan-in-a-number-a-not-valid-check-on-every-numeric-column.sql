--! Previous: sha1:7ec7399f64ed3c2a738045d9e13633781e07eb4d
--! Hash: sha1:083abf86bac6697150705e4e4c70586f224346fc
--! Message: No NaN in a number: a NOT VALID check on every numeric column of weld_public

-- No NaN in a number (issue F11, found while making PostgreSQL write the JSON answers).
--
-- numeric accepts 'NaN' (and, unconstrained, 'Infinity'). JSON cannot carry either, so REST never
-- sends one, but GraphQL's BigFloat is a string and "NaN" went through: row_to_json then renders
-- the column as the string "NaN" where the contract promises a number, in every REST answer
-- holding that row (and Node's parseFloat of it, NaN, stringifies as null). And NaN compares
-- greater than every number, so range checks such as `size > 0` let it by. Every numeric column of weld_public refuses it now: a CHECK per
-- column (23514, REST and GraphQL answer 422 naming the field). Infinity needs no check: every
-- one of these columns has a precision, and numeric(p, s) refuses infinities by itself (22003).
--
-- NOT VALID: the checks hold for every write from now on without a scan of the existing rows
-- at migration (the welds table of a large tenant is millions of rows). A DBA who wants the old
-- rows checked too runs `alter table ... validate constraint ...` when it suits, after fixing
-- any row it reports. A new numeric column needs its check: test/db/resources.test.ts fails for
-- one without.
--
-- Idempotent: graphile-migrate runs this file again on every save.

alter table weld_public.examination_rules
  drop constraint if exists examination_rules_percent_is_a_number,
  add constraint examination_rules_percent_is_a_number check (percent <> 'NaN') not valid;

alter table weld_public.isos
  drop constraint if exists isos_rt_percent_is_a_number,
  add constraint isos_rt_percent_is_a_number check (rt_percent <> 'NaN') not valid;

alter table weld_public.pqrs
  drop constraint if exists pqrs_diameter_tested_in_is_a_number,
  drop constraint if exists pqrs_thickness_tested_in_is_a_number,
  add constraint pqrs_diameter_tested_in_is_a_number
    check (diameter_tested_in <> 'NaN') not valid,
  add constraint pqrs_thickness_tested_in_is_a_number
    check (thickness_tested_in <> 'NaN') not valid;

alter table weld_public.qualification_range_rules
  drop constraint if exists qualification_range_rules_coupon_below_in_is_a_number,
  drop constraint if exists qualification_range_rules_coupon_from_in_is_a_number,
  drop constraint if exists qualification_range_rules_max_factor_is_a_number,
  drop constraint if exists qualification_range_rules_min_in_is_a_number,
  add constraint qualification_range_rules_coupon_below_in_is_a_number
    check (coupon_below_in <> 'NaN') not valid,
  add constraint qualification_range_rules_coupon_from_in_is_a_number
    check (coupon_from_in <> 'NaN') not valid,
  add constraint qualification_range_rules_max_factor_is_a_number
    check (max_factor <> 'NaN') not valid,
  add constraint qualification_range_rules_min_in_is_a_number
    check (min_in <> 'NaN') not valid;

alter table weld_public.test_packages
  drop constraint if exists test_packages_test_pressure_psig_is_a_number,
  add constraint test_packages_test_pressure_psig_is_a_number
    check (test_pressure_psig <> 'NaN') not valid;

alter table weld_public.welder_qualifications
  drop constraint if exists welder_qualifications_coupon_diameter_in_is_a_number,
  drop constraint if exists welder_qualifications_coupon_thickness_in_is_a_number,
  drop constraint if exists welder_qualifications_diameter_max_in_is_a_number,
  drop constraint if exists welder_qualifications_diameter_min_in_is_a_number,
  drop constraint if exists welder_qualifications_thickness_max_in_is_a_number,
  add constraint welder_qualifications_coupon_diameter_in_is_a_number
    check (coupon_diameter_in <> 'NaN') not valid,
  add constraint welder_qualifications_coupon_thickness_in_is_a_number
    check (coupon_thickness_in <> 'NaN') not valid,
  add constraint welder_qualifications_diameter_max_in_is_a_number
    check (diameter_max_in <> 'NaN') not valid,
  add constraint welder_qualifications_diameter_min_in_is_a_number
    check (diameter_min_in <> 'NaN') not valid,
  add constraint welder_qualifications_thickness_max_in_is_a_number
    check (thickness_max_in <> 'NaN') not valid;

alter table weld_public.welds
  drop constraint if exists welds_size_is_a_number,
  drop constraint if exists welds_wall_thickness_is_a_number,
  add constraint welds_size_is_a_number check (size <> 'NaN') not valid,
  add constraint welds_wall_thickness_is_a_number check (wall_thickness <> 'NaN') not valid;

alter table weld_public.wps
  drop constraint if exists wps_diameter_max_in_is_a_number,
  drop constraint if exists wps_diameter_min_in_is_a_number,
  drop constraint if exists wps_thickness_max_in_is_a_number,
  drop constraint if exists wps_thickness_min_in_is_a_number,
  add constraint wps_diameter_max_in_is_a_number check (diameter_max_in <> 'NaN') not valid,
  add constraint wps_diameter_min_in_is_a_number check (diameter_min_in <> 'NaN') not valid,
  add constraint wps_thickness_max_in_is_a_number check (thickness_max_in <> 'NaN') not valid,
  add constraint wps_thickness_min_in_is_a_number check (thickness_min_in <> 'NaN') not valid;
