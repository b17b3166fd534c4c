/** What `trainsync.provisioning_actions.feed_hash` holds for an action a SCIM request planned. */
export const SCIM_AUDIT_MARK = 'via SCIM';
