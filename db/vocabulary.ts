// The words the database and the TypeScript layers share, each spelled once. Every list mirrors a
// SQL enum, CHECK constraint or role of the migrations; test/db/vocabulary.test.ts reads the
// catalog and fails when the two drift apart.

/** The database roles a request runs as, least privileged first; each includes the ones before. */
export const REQUEST_ROLES = [
  'weld_anonymous',
  'weld_viewer',
  'weld_inspector',
  'weld_engineer',
  'weld_admin',
] as const;
export type RequestRole = (typeof REQUEST_ROLES)[number];

/** A user's role (SQL enum weld_public.user_role), least first. */
export const USER_ROLES = ['viewer', 'inspector', 'engineer', 'admin'] as const;
export type UserRole = (typeof USER_ROLES)[number];

/** The request role a signed-in user's transactions run as. */
export const requestRoleOf = (role: UserRole): RequestRole => `weld_${role}`;

/** A weld's status (SQL enum weld_public.weld_status), as the contract spells it. */
export const WELD_STATUSES = ['PENDING', 'ACCEPTED', 'REJECTED', 'REPAIR', 'VOIDED'] as const;
export type WeldStatus = (typeof WELD_STATUSES)[number];

/** Weld types (CHECK on weld_public.welds.type): butt, socket, fillet, branch, tie-in. */
export const WELD_TYPES = ['BW', 'SW', 'FW', 'BR', 'TW'] as const;

/** Fluid services of B31.3 (CHECK on weld_public.isos.fluid_service). */
export const FLUID_SERVICES = [
  'normal',
  'category_d',
  'category_m',
  'severe_cyclic',
  'high_pressure',
] as const;

/** Page sizes of every list, REST and GraphQL alike. */
export const PAGE_SIZE = { default: 50, max: 500 } as const;

/** Welding processes of ASME IX; a process field holds one or several joined by "+" (GTAW+SMAW). */
export const WELDING_PROCESSES = ['SMAW', 'GTAW', 'GMAW', 'FCAW', 'SAW', 'PAW'] as const;

/** States of a WPS (CHECK on weld_public.wps.state). */
export const WPS_STATES = ['draft', 'approved', 'superseded'] as const;

/** Welding positions a qualification covers (CHECK on welder_qualifications.positions). */
export const WELDING_POSITIONS = [
  '1G', '2G', '3G', '4G', '5G', '6G', '1F', '2F', '3F', '4F', '5F',
] as const; // prettier-ignore

/** NDT methods (CHECK on weld_public.ndt_records.method); only RT has film. */
export const NDT_METHODS = ['RT', 'UT', 'MT', 'PT', 'VT', 'PWHT', 'PMI', 'HT'] as const;

/** The result of an examination, of a weld in it, or of a film interval. */
export const EXAMINATION_RESULTS = ['accepted', 'rejected'] as const;

/** Kinds of inspection (CHECK on weld_public.inspections.kind). */
export const INSPECTION_KINDS = ['fit-up', 'visual', 'dimensional', 'final'] as const;

/** Test media and states of a test package (CHECKs on weld_public.test_packages). */
export const TEST_MEDIA = ['hydro', 'pneumatic', 'service'] as const;
export const TEST_PACKAGE_STATES = ['open', 'released', 'tested', 'closed'] as const;
