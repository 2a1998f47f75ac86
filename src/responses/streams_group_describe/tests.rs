use bytes::{BufMut, Bytes, BytesMut};

use super::*;
use crate::responses::test_support::assert_truncations_and_trailing_rejected;

/// A tiny flexible encoder for the sample (kafka-protocol 0.18 has no StreamsGroupDescribe).
#[derive(Default)]
struct W(BytesMut);

impl W {
    fn uv(&mut self, mut n: u32) -> &mut Self {
        while n >= 0x80 {
            self.0.put_u8((n as u8 & 0x7f) | 0x80);
            n >>= 7;
        }
        self.0.put_u8(n as u8);
        self
    }
    fn s(&mut self, text: &str) -> &mut Self {
        self.uv(text.len() as u32 + 1);
        self.0.put_slice(text.as_bytes());
        self
    }
    fn null(&mut self) -> &mut Self {
        self.uv(0)
    }
    fn len(&mut self, n: usize) -> &mut Self {
        self.uv(n as u32 + 1)
    }
    fn i8(&mut self, v: i8) -> &mut Self {
        self.0.put_i8(v);
        self
    }
    fn i16(&mut self, v: i16) -> &mut Self {
        self.0.put_i16(v);
        self
    }
    fn i32(&mut self, v: i32) -> &mut Self {
        self.0.put_i32(v);
        self
    }
    fn i64(&mut self, v: i64) -> &mut Self {
        self.0.put_i64(v);
        self
    }
    /// A tagged-field section holding one unknown field, so that skipping is exercised.
    fn tags(&mut self) -> &mut Self {
        self.uv(1).uv(7).uv(1);
        self.0.put_u8(b'x');
        self
    }
    fn topic_info(&mut self, name: &str) -> &mut Self {
        self.s(name)
            .i32(4)
            .i16(3)
            .len(1)
            .s("cleanup.policy")
            .s("compact")
            .tags()
            .tags()
    }
    fn task_ids(&mut self, subtopology: &str, partitions: &[i32]) -> &mut Self {
        self.s(subtopology).len(partitions.len());
        for p in partitions {
            self.i32(*p);
        }
        self.tags()
    }
}

fn sample() -> Bytes {
    let mut w = W::default();
    w.i32(3).len(2);
    // A stable group with its topology and one member.
    w.i16(0).null().s("word-count").s("Stable").i32(5).i32(4);
    w.i8(1).i32(2).len(2);
    w.s("0")
        .len(1)
        .s("words")
        .len(1)
        .s("word-count-repartition")
        .len(0)
        .len(0)
        .tags();
    w.s("1")
        .len(0)
        .len(0)
        .len(1)
        .topic_info("word-count-store-changelog");
    w.len(1).topic_info("word-count-repartition").tags();
    w.tags();
    w.len(1);
    w.s("m-1")
        .i32(7)
        .s("static")
        .null()
        .s("client")
        .s("/10.0.0.1")
        .i32(2)
        .s("proc");
    w.i8(1).s("host").i16(-2).tags(); // endpoint, port 65534
    w.len(1).s("zone").s("a").tags();
    w.len(1).s("0").i32(0).i64(10).tags();
    w.len(0);
    w.len(2)
        .task_ids("0", &[0, 1])
        .task_ids("1", &[2])
        .len(1)
        .task_ids("0", &[3])
        .len(0)
        .tags();
    w.len(0).len(0).len(0).tags();
    w.i8(0).tags();
    w.i32(i32::MIN).tags();
    // An unknown group: no topology, no members.
    w.i16(69)
        .s("not a streams group")
        .s("nope")
        .s("")
        .i32(0)
        .i32(0)
        .i8(-1)
        .len(0)
        .i32(0)
        .tags();
    w.tags();
    w.0.freeze()
}

#[test]
fn decodes_state_topology_and_members() {
    let r = StreamsGroupDescribeResponse::decode(sample(), 0).unwrap();
    assert_eq!(r.throttle_time_ms, 3);
    let g = &r.groups[0];
    assert_eq!(
        (g.group_id.as_str(), g.group_state.as_str()),
        ("word-count", "Stable")
    );
    assert_eq!((g.group_epoch, g.assignment_epoch), (5, 4));
    let t = g.topology.as_ref().unwrap();
    assert_eq!(t.epoch, 2);
    assert_eq!(t.subtopologies.len(), 2);
    assert_eq!(t.subtopologies[0].source_topics, vec!["words".to_string()]);
    assert_eq!(
        t.subtopologies[1].repartition_source_topics,
        vec!["word-count-repartition".to_string()]
    );
    assert_eq!(g.members.len(), 1);
    let m = &g.members[0];
    assert_eq!(m.member_id, "m-1");
    assert_eq!(m.instance_id.as_deref(), Some("static"));
    assert_eq!(
        (m.topology_epoch, m.active_tasks, m.is_classic),
        (2, 3, false)
    );
    assert_eq!(g.authorized_operations, i32::MIN);
    let missing = &r.groups[1];
    assert_eq!(missing.error_code, 69);
    assert_eq!(missing.topology, None);
    assert!(missing.members.is_empty());
}

#[test]
fn truncations_trailing_bytes_and_other_versions_are_rejected() {
    let body = sample();
    assert_truncations_and_trailing_rejected(&body, 0, StreamsGroupDescribeResponse::decode);
    assert!(StreamsGroupDescribeResponse::decode(body, 1).is_err());
}

#[test]
fn a_hostile_member_count_fails_before_allocating() {
    let mut w = W::default();
    w.i32(0)
        .len(1)
        .i16(0)
        .null()
        .s("g")
        .s("Empty")
        .i32(0)
        .i32(0)
        .i8(-1);
    w.uv(u32::MAX);
    let err = StreamsGroupDescribeResponse::decode(w.0.freeze(), 0).unwrap_err();
    assert!(err.problem.contains("cannot fit"), "{err}");
}
