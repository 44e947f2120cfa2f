//! Access control entries: CreateAcls adds entries (one already there is answered as
//! created and changes nothing), DeleteAcls removes every entry a filter matches and
//! answers each filter with the entries it removed.

use std::collections::BTreeSet;

use super::CommandOutcome;
use crate::metadata::image::ClusterImage;
use crate::metadata::records::MetadataRecord;
use crate::security::acl::{AclBinding, AclFilter};

pub(super) fn create_acls(
    image: &ClusterImage,
    acls: &[AclBinding],
) -> (Vec<MetadataRecord>, CommandOutcome) {
    let mut added = BTreeSet::new();
    let records = acls
        .iter()
        .filter(|acl| !image.acls.contains(acl) && added.insert(*acl))
        .map(|acl| MetadataRecord::AclCreated { acl: acl.clone() })
        .collect();
    (records, CommandOutcome::Done)
}

pub(super) fn delete_acls(
    image: &ClusterImage,
    filters: &[AclFilter],
) -> (Vec<MetadataRecord>, CommandOutcome) {
    let matched: Vec<Vec<AclBinding>> = filters
        .iter()
        .map(|filter| {
            image
                .acls
                .iter()
                .filter(|acl| filter.matches(acl))
                .cloned()
                .collect()
        })
        .collect();
    let removed: BTreeSet<&AclBinding> = matched.iter().flatten().collect();
    let records = removed
        .into_iter()
        .map(|acl| MetadataRecord::AclRemoved { acl: acl.clone() })
        .collect();
    (records, CommandOutcome::AclsDeleted(matched))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::security::acl::{Operation, PatternType, Permission, ResourceType};

    fn acl(name: &str, principal: &str) -> AclBinding {
        AclBinding {
            resource_type: ResourceType::Topic,
            resource_name: name.into(),
            pattern_type: PatternType::Literal,
            principal: principal.into(),
            host: "*".into(),
            operation: Operation::Read,
            permission: Permission::Allow,
        }
    }

    #[test]
    fn creations_are_idempotent_and_deletions_answer_each_filter() {
        let mut image = ClusterImage::default();
        let entries = [acl("a", "User:x"), acl("b", "User:x"), acl("a", "User:y")];
        let (records, _) = create_acls(&image, &[entries[0].clone(), entries[0].clone()]);
        assert_eq!(records.len(), 1, "a duplicate in one request is added once");
        for record in records {
            image.apply(&record);
        }
        let (records, _) = create_acls(&image, &entries);
        assert_eq!(records.len(), 2, "the one already there is not added again");
        for record in records {
            image.apply(&record);
        }
        assert_eq!(image.acls.len(), 3);
        let by_x = AclFilter {
            resource_type: ResourceType::Any,
            resource_name: None,
            pattern_type: PatternType::Any,
            principal: Some("User:x".into()),
            host: None,
            operation: Operation::Any,
            permission: Permission::Any,
        };
        let on_a = AclFilter {
            principal: None,
            resource_name: Some("a".into()),
            ..by_x.clone()
        };
        let (records, outcome) = delete_acls(&image, &[by_x, on_a]);
        let CommandOutcome::AclsDeleted(matched) = outcome else {
            panic!("{outcome:?}")
        };
        assert_eq!(matched[0].len(), 2);
        assert_eq!(matched[1].len(), 2);
        assert_eq!(
            records.len(),
            3,
            "an entry two filters match is removed once"
        );
        for record in records {
            image.apply(&record);
        }
        assert!(image.acls.is_empty());
    }
}
