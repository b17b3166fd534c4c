/** kysely row types of the provisioning tables in schema `trainsync` (owned by src/provisioning). */
// eslint-disable-next-line @typescript-eslint/no-empty-interface
export interface ProvisioningTables {}
