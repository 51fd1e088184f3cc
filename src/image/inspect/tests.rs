use super::*;

fn rules() -> ImageRules {
    ImageRules::default()
}

/// A qcow2 header: `version`, a backing file offset, incompatible feature bits.
fn qcow2(version: u32, backing_offset: u64, features: u64) -> Vec<u8> {
    let mut head = vec![0u8; 512];
    head[..4].copy_from_slice(b"QFI\xfb");
    head[4..8].copy_from_slice(&version.to_be_bytes());
    head[8..16].copy_from_slice(&backing_offset.to_be_bytes());
    head[24..32].copy_from_slice(&(1u64 << 30).to_be_bytes());
    head[72..80].copy_from_slice(&features.to_be_bytes());
    head
}

/// A VMDK sparse header (`capacity` sectors) with `descriptor` embedded at 0x200.
fn vmdk(capacity: u64, descriptor: &str) -> Vec<u8> {
    let mut head = vec![0u8; 512];
    head[..4].copy_from_slice(b"KDMV");
    head[4..8].copy_from_slice(&1u32.to_le_bytes());
    head[12..20].copy_from_slice(&capacity.to_le_bytes());
    head[28..36].copy_from_slice(&1u64.to_le_bytes());
    head[36..44].copy_from_slice(&20u64.to_le_bytes());
    let mut text = descriptor.as_bytes().to_vec();
    text.resize(20 * 512, 0);
    head.extend(text);
    head
}

fn descriptor(create_type: &str, extent: &str) -> String {
    format!(
        "# Disk DescriptorFile\nversion=1\nCID=a58c4eb7\nparentCID=ffffffff\n\
         createType=\"{create_type}\"\n\n# Extent description\n{extent}\n\n\
         # The Disk Data Base\n#DDB\n\nddb.virtualHWVersion = \"4\"\nddb.adapterType = \"ide\"\n"
    )
}

#[test]
fn formats_are_told_by_their_magic_not_their_name() {
    let mut vdi = vec![0u8; 512];
    vdi[0x40..0x44].copy_from_slice(&0xbeda_107f_u32.to_le_bytes());
    let cases: [(&[u8], Format); 8] = [
        (&qcow2(3, 0, 0), Format::Qcow2),
        (b"QED\0rest", Format::Qed),
        (b"conectix and more", Format::Vhd),
        (b"vhdxfile and more", Format::Vhdx),
        (&vmdk(2048, ""), Format::Vmdk),
        (&vdi, Format::Vdi),
        (b"LUKS\xba\xbe", Format::Raw),
        (b"", Format::Raw),
    ];
    for (head, format) in cases {
        assert_eq!(detect(head), format, "{:?}", &head[..head.len().min(8)]);
    }
}

#[test]
fn the_bytes_must_be_the_format_the_record_names() {
    let raw = vec![0u8; 4096];
    assert_eq!(check(&raw, "raw", &rules()), Ok(Format::Raw));
    assert_eq!(check(&raw, "iso", &rules()), Ok(Format::Raw));
    assert_eq!(check(&qcow2(3, 0, 0), "qcow2", &rules()), Ok(Format::Qcow2));
    let cases = [
        (qcow2(3, 0, 0), "raw", Format::Qcow2),
        (raw.clone(), "qcow2", Format::Raw),
        // A descriptor-only VMDK (a text file naming host files) reads as raw.
        (
            descriptor("monolithicFlat", "RW 2048 FLAT \"/etc/shadow\" 0").into_bytes(),
            "vmdk",
            Format::Raw,
        ),
        (qcow2(3, 0, 0), "vmdk", Format::Qcow2),
    ];
    for (head, declared, found) in cases {
        assert_eq!(
            check(&head, declared, &rules()),
            Err(Refusal::Mismatch {
                declared: declared.into(),
                found
            }),
            "{declared}"
        );
    }
    for unknown in ["ami", "ploop", "aki", "", "QCOW2"] {
        assert_eq!(
            check(&raw, unknown, &rules()),
            Err(Refusal::UnknownFormat(unknown.into()))
        );
    }
}

#[test]
fn qcow2_may_not_reach_outside_itself() {
    let table = [
        (qcow2(2, 0, 0), Ok(Format::Qcow2)),
        (qcow2(3, 0, 0), Ok(Format::Qcow2)),
        // dirty, corrupt and the compression type are known bits
        (qcow2(3, 0, 0b1011), Ok(Format::Qcow2)),
        (qcow2(2, 0x200, 0), Err(Refusal::BackingFile(Format::Qcow2))),
        (qcow2(3, 0x200, 0), Err(Refusal::BackingFile(Format::Qcow2))),
        (qcow2(3, 0, 0b100), Err(Refusal::DataFile)),
        (qcow2(3, 0, 1 << 4), Err(Refusal::UnknownFeatures)),
        (qcow2(3, 0, 1 << 63), Err(Refusal::UnknownFeatures)),
        // version 2 has no feature field: whatever follows the header is not read so
        (qcow2(2, 0, 0b100), Ok(Format::Qcow2)),
        (
            qcow2(3, 0, 0)[..40].to_vec(),
            Err(Refusal::Truncated(Format::Qcow2)),
        ),
    ];
    for (i, (head, expected)) in table.into_iter().enumerate() {
        assert_eq!(check(&head, "qcow2", &rules()), expected, "case {i}");
    }
}

#[test]
fn qed_is_never_taken() {
    let mut head = b"QED\0".to_vec();
    head.resize(512, 0);
    assert_eq!(
        check(&head, "raw", &rules()),
        Err(Refusal::Mismatch {
            declared: "raw".into(),
            found: Format::Qed
        })
    );
}

#[test]
fn vmdk_takes_only_single_file_sparse_types_without_paths() {
    let own = "RW 2048 SPARSE \"disk.vmdk\"";
    let ok = |d: String| check(&vmdk(2048, &d), "vmdk", &rules());
    assert_eq!(ok(descriptor("monolithicSparse", own)), Ok(Format::Vmdk));
    assert_eq!(ok(descriptor("streamOptimized", own)), Ok(Format::Vmdk));
    let refused = [
        descriptor("monolithicFlat", "RW 2048 FLAT \"shadow\" 0"),
        descriptor("twoGbMaxExtentFlat", "RW 2048 FLAT \"shadow\" 0"),
        descriptor("vmfs", "RW 2048 VMFS \"disk-flat.vmdk\""),
        descriptor("monolithicSparse", "RW 2048 FLAT \"/etc/shadow\" 0"),
        descriptor("monolithicSparse", "RW 2048 FLAT \"../../etc/shadow\" 0"),
        descriptor("monolithicSparse", ""),
        descriptor(
            "monolithicSparse",
            &format!("{own}\nparentFileNameHint /base.vmdk"),
        ),
        descriptor(
            "monolithicSparse",
            &format!("{own}\nparentFileNameHint=\"base.vmdk\""),
        ),
        descriptor(
            "monolithicSparse",
            &format!("{own}\n# parentFileNameHint=\"x\""),
        ),
        "version=1\nRW 2048 SPARSE \"disk.vmdk\"\n".to_owned(),
        descriptor("monolithicSparse", "rw 2048 SPARSE \"d\u{e9}.vmdk\""),
    ];
    for d in refused {
        assert!(matches!(ok(d.clone()), Err(Refusal::Vmdk(_))), "{d}");
    }
    // A header without capacity hands qemu the descriptor's extents: refused, even for
    // an allowed type.
    let zero = vmdk(0, &descriptor("monolithicSparse", own));
    assert!(matches!(
        check(&zero, "vmdk", &rules()),
        Err(Refusal::Vmdk(_))
    ));
    // The descriptor must be at sector 1, as qemu reads it.
    let mut moved = vmdk(2048, &descriptor("monolithicSparse", own));
    moved[28..36].copy_from_slice(&2u64.to_le_bytes());
    assert!(matches!(
        check(&moved, "vmdk", &rules()),
        Err(Refusal::Vmdk(_))
    ));
    // Cut short before the descriptor ends.
    let whole = vmdk(2048, &descriptor("monolithicSparse", own));
    assert_eq!(
        check(&whole[..600], "vmdk", &rules()),
        Err(Refusal::Truncated(Format::Vmdk))
    );
}

#[test]
fn vmdk_allowed_types_is_the_deployments_choice() {
    let flat = vmdk(2048, &descriptor("monolithicFlat", "RW 2048 FLAT \"x\" 0"));
    let open = ImageRules {
        vmdk_allowed_types: vec!["monolithicFlat".into()],
        ..rules()
    };
    assert_eq!(check(&flat, "vmdk", &open), Ok(Format::Vmdk));
    let none = ImageRules {
        vmdk_allowed_types: Vec::new(),
        ..rules()
    };
    let sparse = vmdk(
        2048,
        &descriptor("monolithicSparse", "RW 2048 SPARSE \"d.vmdk\""),
    );
    assert!(matches!(
        check(&sparse, "vmdk", &none),
        Err(Refusal::Vmdk(_))
    ));
}

#[test]
fn disabled_conversion_takes_only_raw() {
    let rules = ImageRules {
        conversion_disabled: true,
        ..rules()
    };
    assert_eq!(check(&[0; 512], "raw", &rules), Ok(Format::Raw));
    assert_eq!(
        check(&qcow2(3, 0, 0), "qcow2", &rules),
        Err(Refusal::ConversionDisabled("qcow2".into()))
    );
    assert_eq!(
        check(&[0; 512], "iso", &rules),
        Err(Refusal::ConversionDisabled("iso".into()))
    );
}

#[test]
fn a_volumes_own_bytes_are_judged_as_what_they_show() {
    assert_eq!(check_found(&[0; 512], &rules()), Ok(Format::Raw));
    assert_eq!(check_found(&qcow2(3, 0, 0), &rules()), Ok(Format::Qcow2));
    assert_eq!(
        check_found(&qcow2(3, 0x200, 0), &rules()),
        Err(Refusal::BackingFile(Format::Qcow2))
    );
}
