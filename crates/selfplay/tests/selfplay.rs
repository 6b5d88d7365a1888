//! The self-play pool and its records, with the uniform evaluator.

use yari_io::frame::FrameError;
use yari_rules::Move;
use yari_search::{GumbelConfig, PuctConfig, SearchConfig, SearchVariant, UniformEvaluator};
use yari_selfplay::record::{decode_shard, encode_shard};
use yari_selfplay::{
    list_shards, read_shard, run_selfplay, write_shard, GameEnd, GameRecord, GameResult,
    RecordError, RunOptions, SelfplayConfig, ShardWriter,
};

/// Small and quick: short games, few simulations.
fn quick(seed: u64) -> SelfplayConfig {
    SelfplayConfig {
        full_simulations: 12,
        cheap_simulations: 4,
        full_search_fraction: 0.5,
        ply_cap: 60,
        concurrent_games: 5,
        seed,
        ..SelfplayConfig::default()
    }
}

fn play(config: &SelfplayConfig, games: usize) -> Vec<GameRecord> {
    let mut out = Vec::new();
    let stats = run_selfplay(
        &UniformEvaluator,
        config,
        games,
        RunOptions::default(),
        |g| {
            out.push(g);
            Ok(())
        },
    )
    .unwrap();
    assert_eq!(stats.games, games);
    assert_eq!(out.len(), games);
    out
}

#[test]
fn same_seed_same_games_whatever_the_threads() {
    let config = quick(11);
    let one = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    let two = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .unwrap();
    let a = one.install(|| play(&config, 8));
    let b = two.install(|| play(&config, 8));
    assert_eq!(a, b);
    let c = play(&quick(12), 8);
    assert_ne!(a, c, "a different seed should give different games");
    // Gumbel noise and PUCT sampling both depend on the seed.
    let puct = SelfplayConfig {
        search: SearchConfig {
            variant: SearchVariant::Puct(PuctConfig::default()),
            ..SearchConfig::default()
        },
        ..quick(11)
    };
    assert_eq!(play(&puct, 4), play(&puct, 4));
}

#[test]
fn games_are_complete_and_replayable() {
    for variant in [
        SearchVariant::Gumbel(GumbelConfig::default()),
        SearchVariant::Puct(PuctConfig::default()),
    ] {
        let mut config = quick(3);
        config.search.variant = variant;
        for g in play(&config, 6) {
            g.validate().unwrap();
            assert!(g.moves.len() <= 60);
            let end = g.final_position().unwrap();
            match g.end {
                GameEnd::PlyCap => {
                    assert_eq!(g.moves.len(), 60);
                    assert_eq!(g.result, GameResult::Draw);
                }
                GameEnd::Resignation => {}
                _ => {
                    let outcome = end.outcome().expect("the rules ended the game");
                    assert_eq!(GameEnd::from(outcome.reason), g.end);
                    assert_eq!(GameResult::from_winner(outcome.winner), g.result);
                }
            }
            // Playout cap randomization: only some moves are samples.
            assert!(g.samples.len() < g.moves.len().max(1));
            let mut n = 0;
            for (pos, s) in g.replay_samples().unwrap() {
                n += 1;
                assert_eq!(pos.plies_played(), s.ply as usize);
                let legal = pos.legal_moves();
                assert_eq!(s.policy.len(), legal.len());
                let sum: f32 = s.policy.iter().map(|(_, p)| p).sum();
                assert!((sum - 1.0).abs() < 1e-4);
                for &(code, _) in &s.policy {
                    assert!(legal.contains(&Move::from_u16(code).unwrap()));
                }
                let wdl = g.wdl_target(&pos);
                assert_eq!(wdl.iter().sum::<f32>(), 1.0);
            }
            assert_eq!(n, g.samples.len());
        }
    }
}

#[test]
fn full_search_fraction_one_trains_on_every_unforced_move() {
    let config = SelfplayConfig {
        full_search_fraction: 1.0,
        ..quick(5)
    };
    for g in play(&config, 3) {
        let forced = g
            .replay_samples()
            .unwrap()
            .filter(|(pos, _)| pos.legal_moves().len() <= 1)
            .count();
        assert_eq!(forced, 0);
        assert!(
            g.samples.len() + 5 >= g.moves.len(),
            "{} of {}",
            g.samples.len(),
            g.moves.len()
        );
    }
}

#[test]
fn resignation_and_false_resign_measurement() {
    // The uniform evaluator values everything as a draw (0), so a threshold above 0 makes
    // every side "lose" at once: games with resignation on end by resignation, the others
    // are played out and record who would have resigned.
    let config = SelfplayConfig {
        resign_threshold: 0.5,
        resign_consecutive: 2,
        resign_disabled_fraction: 0.5,
        ..quick(9)
    };
    let mut stats_games = Vec::new();
    let stats = run_selfplay(&UniformEvaluator, &config, 12, RunOptions::default(), |g| {
        stats_games.push(g);
        Ok(())
    })
    .unwrap();
    let disabled: Vec<_> = stats_games
        .iter()
        .filter(|g| g.resignation_disabled)
        .collect();
    assert!(!disabled.is_empty() && disabled.len() < 12);
    for g in &stats_games {
        if g.resignation_disabled {
            assert_ne!(g.end, GameEnd::Resignation);
            // White searches first, so White meets the rule first.
            assert_eq!(g.would_resign, Some(GameResult::BlackWins));
        } else {
            assert_eq!(g.end, GameEnd::Resignation);
            assert_eq!(g.moves.len(), 2, "white resigns on its second move");
            assert_eq!(g.result, GameResult::BlackWins);
        }
    }
    assert_eq!(stats.resign_disabled_games, disabled.len());
    assert_eq!(stats.would_resign_games, disabled.len());
    let false_resigns = disabled
        .iter()
        .filter(|g| g.result != GameResult::BlackWins)
        .count();
    assert_eq!(stats.false_resignations, false_resigns);
    assert_eq!(
        stats.false_resign_rate(),
        Some(false_resigns as f64 / disabled.len() as f64)
    );
    assert!(stats.resign_rate() > 0.0);
}

#[test]
fn shard_round_trip() {
    let games = play(&quick(21), 5);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.yshard");
    write_shard(&path, &games).unwrap();
    assert_eq!(read_shard(&path).unwrap(), games);

    let mut writer = ShardWriter::new(dir.path().join("run"), "sp", 2).unwrap();
    for g in games.iter().cloned() {
        writer.push(g).unwrap();
    }
    let written = writer.finish().unwrap();
    assert_eq!(written.len(), 3);
    // A stray temporary file is not a shard.
    std::fs::write(
        dir.path().join("run").join(".sp-00003.yshard.1.tmp"),
        b"partial",
    )
    .unwrap();
    let listed = list_shards(dir.path().join("run")).unwrap();
    assert_eq!(listed, written);
    let back: Vec<GameRecord> = listed.iter().flat_map(|p| read_shard(p).unwrap()).collect();
    assert_eq!(back, games);

    // Writing the same shard names again is refused rather than overwriting.
    let mut again = ShardWriter::new(dir.path().join("run"), "sp", 2).unwrap();
    assert!(matches!(
        again.push(games[0].clone()),
        Err(RecordError::AlreadyExists(_))
    ));
    assert_eq!(list_shards(dir.path().join("run")).unwrap(), written);

    // An empty shard is valid.
    assert_eq!(decode_shard(&encode_shard(&[]).unwrap()).unwrap(), vec![]);
}

#[test]
fn truncated_shards_are_rejected() {
    let games = play(&quick(22), 2);
    let bytes = encode_shard(&games).unwrap();
    for len in [0, 3, 10, 23, 24, bytes.len() / 2, bytes.len() - 1] {
        let err = decode_shard(&bytes[..len]).unwrap_err();
        assert!(
            matches!(err, RecordError::Frame(FrameError::Truncated { .. })),
            "len {len}: {err}"
        );
    }
    let mut longer = bytes.clone();
    longer.push(0);
    assert!(matches!(
        decode_shard(&longer),
        Err(RecordError::Frame(FrameError::TrailingData { extra: 1 }))
    ));

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cut.yshard");
    std::fs::write(&path, &bytes[..bytes.len() - 7]).unwrap();
    assert!(matches!(
        read_shard(&path),
        Err(RecordError::Frame(FrameError::Truncated { .. }))
    ));
    assert!(matches!(
        read_shard(dir.path().join("missing.yshard")),
        Err(RecordError::Io { .. })
    ));
}

#[test]
fn corrupt_shards_are_rejected() {
    let games = play(&quick(23), 2);
    let bytes = encode_shard(&games).unwrap();
    // Every single flipped bit in the payload or checksum is caught by the checksum.
    for i in (20..bytes.len()).step_by(7) {
        let mut bad = bytes.clone();
        bad[i] ^= 0x10;
        let err = decode_shard(&bad).unwrap_err();
        assert!(
            matches!(err, RecordError::Frame(FrameError::ChecksumMismatch { .. })),
            "byte {i}: {err}"
        );
    }
    let mut bad = bytes.clone();
    bad[0] = b'X';
    assert!(matches!(
        decode_shard(&bad),
        Err(RecordError::Frame(FrameError::BadMagic { .. }))
    ));
    let mut bad = bytes.clone();
    bad[4] = 9;
    assert!(matches!(
        decode_shard(&bad),
        Err(RecordError::Frame(FrameError::UnsupportedVersion {
            found: 9,
            ..
        }))
    ));
    assert!(matches!(
        decode_shard(b"not a shard at all, just text"),
        Err(RecordError::Frame(FrameError::BadMagic { .. }))
    ));
}

#[test]
fn checksummed_but_invalid_games_are_rejected() {
    // A record that is well formed but illegal (as a buggy writer could produce) must be an
    // error at read time, not a panic in the trainer.
    let mut games = play(&quick(24), 1);
    games[0].moves[0] = Move::parse_uci("a1a9").unwrap().to_u16();
    let bytes = encode_shard(&games).unwrap();
    assert!(matches!(
        decode_shard(&bytes),
        Err(RecordError::InvalidGame { .. })
    ));

    let mut games = play(&quick(24), 1);
    if let Some(s) = games[0].samples.first_mut() {
        s.policy[0].1 += 0.5;
        let bytes = encode_shard(&games).unwrap();
        assert!(matches!(
            decode_shard(&bytes),
            Err(RecordError::InvalidGame { .. })
        ));
    }
}

#[test]
fn config_validation_and_toml() {
    assert!(SelfplayConfig::default().validate().is_ok());
    let bad = SelfplayConfig {
        full_search_fraction: 1.5,
        ..SelfplayConfig::default()
    };
    let err = bad.validate().unwrap_err();
    assert_eq!(err.field, "full_search_fraction");
    let bad = SelfplayConfig {
        cheap_simulations: 100,
        full_simulations: 10,
        ..SelfplayConfig::default()
    };
    assert_eq!(bad.validate().unwrap_err().field, "cheap_simulations");
    let err = run_selfplay(
        &UniformEvaluator,
        &bad,
        1,
        RunOptions::default(),
        |_| Ok(()),
    )
    .unwrap_err();
    assert!(err.to_string().contains("cheap_simulations"), "{err}");

    let parsed: SelfplayConfig = toml::from_str(
        "full_simulations = 200\nseed = 5\n[search]\ngumbel = false\nc_puct = 2.0\n",
    )
    .unwrap();
    assert_eq!(parsed.full_simulations, 200);
    assert_eq!(parsed.seed, 5);
    assert_eq!(
        parsed.search.variant,
        SearchVariant::Puct(PuctConfig {
            c_puct: 2.0,
            ..PuctConfig::default()
        })
    );
    assert_eq!(
        parsed.cheap_simulations,
        SelfplayConfig::default().cheap_simulations
    );
    assert!(toml::from_str::<SelfplayConfig>("no_such_field = 1").is_err());
}

#[test]
fn bench_reports_throughput() {
    let config = quick(30);
    let r = yari_selfplay::bench_selfplay(
        &UniformEvaluator,
        &config,
        std::time::Duration::from_millis(300),
    )
    .unwrap();
    assert!(r.plies > 0 && r.evaluations > 0);
    assert!(r.positions_per_s > 0.0);
    assert!((0.0..=1.0).contains(&r.search_share));
    assert!(r.average_batch > 1.0 && r.average_batch <= 5.0);
}

/// Handicap games start from the start position less 1 to `handicap_max_pieces` pieces of one
/// side (never a General), are recorded with that start, and replay from it.
#[test]
fn handicap_games_start_short_of_pieces_and_replay() {
    let start = yari_rules::Position::startpos();
    let pieces = |pos: &yari_rules::Position, color: yari_rules::Color| {
        yari_rules::Square::all()
            .filter(|&sq| pos.piece_at(sq).is_some_and(|p| p.color == color))
            .count()
    };
    let full = pieces(&start, yari_rules::Color::White);
    let config = SelfplayConfig {
        handicap_fraction: 0.5,
        handicap_max_pieces: 2,
        ..quick(5)
    };
    let games = play(&config, 24);
    let mut handicapped = 0;
    for g in &games {
        g.validate().unwrap();
        let pos = yari_rules::Position::from_fen(&g.start_fen).unwrap();
        let (w, b) = (
            pieces(&pos, yari_rules::Color::White),
            pieces(&pos, yari_rules::Color::Black),
        );
        if g.start_fen == start.fen() {
            continue;
        }
        handicapped += 1;
        // One side is short of one or two pieces, the other complete, both Generals there.
        let (short, whole) = if w < full { (w, b) } else { (b, w) };
        assert_eq!(whole, full, "{}", g.start_fen);
        assert!((full - 2..full).contains(&short), "{}", g.start_fen);
        for color in [yari_rules::Color::White, yari_rules::Color::Black] {
            assert_eq!(
                pos.board()
                    .pieces(color, yari_rules::Kind::King)
                    .count_ones(),
                1
            );
        }
        assert_eq!(pos.side_to_move(), yari_rules::Color::White);
        g.final_position().unwrap();
    }
    assert!((4..=20).contains(&handicapped), "{handicapped} of 24");
    // Off by default: every game starts from the start position.
    assert!(play(&quick(5), 6)
        .iter()
        .all(|g| g.start_fen == start.fen()));
}

/// All games in the shards of `dir`, in shard order.
fn games_on_disk(dir: &std::path::Path) -> Vec<GameRecord> {
    list_shards(dir)
        .unwrap()
        .iter()
        .flat_map(|p| read_shard(p).unwrap())
        .collect()
}

/// A kill at any moment loses no finished game: each one is in a complete shard as soon as
/// `push` returns, without `flush` or `finish`, and shards still close at `per_shard` games.
#[test]
fn every_pushed_game_is_on_disk_at_once() {
    let games = play(&quick(23), 7);
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("g");
    let mut writer = ShardWriter::new(&dir, "gen-0001-000000", 3).unwrap();
    for (i, g) in games.iter().enumerate() {
        writer.push(g.clone()).unwrap();
        assert_eq!(games_on_disk(&dir), games[..=i], "after game {i}");
        assert_eq!(list_shards(&dir).unwrap().len(), i / 3 + 1);
    }
    // Dropped as a kill would: nothing was buffered.
    drop(writer);
    assert_eq!(games_on_disk(&dir), games);
    let sizes: Vec<usize> = list_shards(&dir)
        .unwrap()
        .iter()
        .map(|p| read_shard(p).unwrap().len())
        .collect();
    assert_eq!(sizes, [3, 3, 1]);
    let names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(names.is_empty(), "no temporary file is left: {names:?}");
}

/// Opening a games directory removes the temporary files of writers that are gone (a kill
/// between writing and renaming leaves one), and keeps those of live processes and every
/// other file.
#[test]
fn stale_temp_files_of_dead_writers_are_removed_on_open() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("g");
    std::fs::create_dir_all(&dir).unwrap();
    let mut live = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .unwrap();
    let mut dead = std::process::Command::new("true").spawn().unwrap();
    dead.wait().unwrap();
    let dead_tmp = format!(".gen-0001-000000-00000.yshard.{}.tmp", dead.id());
    let own_tmp = format!(".gen-0001-000000-00001.yshard.{}.tmp", std::process::id());
    // The name yari_io::write_atomic gives its temporary files: `.NAME.PID-N.tmp`.
    let dead_io_tmp = format!(".gen-0001-000000-00004.yshard.{}-7.tmp", dead.id());
    let live_tmp = format!(".gen-0001-000000-00002.yshard.{}.tmp", live.id());
    let keep = [
        "notes.tmp",
        ".state.json.tmp",
        "x.yshard",
        ".x.yshard.abc.tmp",
    ];
    for name in [&dead_tmp, &own_tmp, &dead_io_tmp, &live_tmp]
        .into_iter()
        .chain(
            keep.iter()
                .map(|s| s.to_string())
                .collect::<Vec<_>>()
                .iter(),
        )
    {
        std::fs::write(dir.join(name), b"partial").unwrap();
    }
    let writer = ShardWriter::new(&dir, "gen-0001-000003", 3).unwrap();
    let removed: Vec<String> = writer
        .removed_temp_files()
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    let mut expected = vec![dead_tmp.clone(), own_tmp.clone(), dead_io_tmp.clone()];
    expected.sort();
    assert_eq!(removed, expected);
    assert!(dir.join(&live_tmp).exists(), "a live writer's file is kept");
    for name in keep {
        assert!(
            dir.join(name).exists(),
            "{name} is not a shard's temporary file"
        );
    }
    live.kill().unwrap();
    live.wait().unwrap();
    let removed = yari_selfplay::remove_stale_temp_files(&dir).unwrap();
    assert_eq!(removed, vec![dir.join(&live_tmp)]);
}

/// A raised stop flag ends the run between rounds: the games finished so far all reach the
/// sink, the games in flight are dropped, and the stats say so.
#[test]
fn stop_flag_ends_the_run_with_the_finished_games() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let config = quick(24);
    let stop = AtomicBool::new(false);
    let mut got = Vec::new();
    let stats = yari_selfplay::run_selfplay_until(
        &UniformEvaluator,
        &config,
        40,
        RunOptions::default(),
        &stop,
        |g| {
            got.push(g);
            if got.len() == 3 {
                stop.store(true, Ordering::SeqCst);
            }
            Ok(())
        },
    )
    .unwrap();
    assert!(stats.stopped);
    assert_eq!(stats.games, got.len());
    // Games finishing in the same round as the third are delivered too, but no later round
    // runs: at most the other games in flight can join them.
    assert!(
        (3..3 + config.concurrent_games).contains(&got.len()),
        "{}",
        got.len()
    );
    // The finished games are the unstopped run's first ones.
    let full = play(&config, 40);
    assert_eq!(got, full[..got.len()]);
    // Unraised, it changes nothing.
    let unstopped = run_selfplay(&UniformEvaluator, &config, 6, RunOptions::default(), |_| {
        Ok(())
    })
    .unwrap();
    assert!(!unstopped.stopped && unstopped.games == 6);
}

/// The search variant in TOML: the flat fields of every config file in the repository keep
/// loading, `gumbel` picks the variant, the other variant's fields are accepted and ignored,
/// and a config written back reads as the same config.
#[test]
fn search_variant_toml_shapes() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../configs");
    for file in ["default.toml", "smoke.toml", "gpu.toml"] {
        let text = std::fs::read_to_string(root.join(file)).unwrap();
        let table: toml::Table = toml::from_str(&text).unwrap();
        let section = table.get("selfplay").cloned().unwrap();
        let config: SelfplayConfig = section.try_into().unwrap_or_else(|e| panic!("{file}: {e}"));
        config.validate().unwrap();
        assert!(config.search.variant.is_gumbel(), "{file}");
        let back: SelfplayConfig = toml::Value::try_from(&config).unwrap().try_into().unwrap();
        assert_eq!(back, config, "{file} round trip");
    }
    let both = "[search]\ngumbel = true\ngumbel_considered = 8\nc_puct = 3.0\n";
    let config: SelfplayConfig = toml::from_str(both).unwrap();
    assert_eq!(
        config.search.variant,
        SearchVariant::Gumbel(GumbelConfig {
            considered: 8,
            ..GumbelConfig::default()
        })
    );
    let text = toml::to_string(&config).unwrap();
    assert!(
        !text.contains("c_puct"),
        "only the active variant is written:\n{text}"
    );
    let puct: SelfplayConfig =
        toml::from_str("[search]\ngumbel = false\ngumbel_considered = 8\nfpu_reduction = 0.5\n")
            .unwrap();
    assert_eq!(
        puct.search.variant,
        SearchVariant::Puct(PuctConfig {
            fpu_reduction: 0.5,
            ..PuctConfig::default()
        })
    );
    let default: SelfplayConfig = toml::from_str("").unwrap();
    assert_eq!(default.search, SearchConfig::default());
    let err = toml::from_str::<SelfplayConfig>("[search]\ngumble = true\n").unwrap_err();
    assert!(err.to_string().contains("gumble"), "{err}");
    let err = toml::from_str::<SelfplayConfig>("[search]\ngumbel = 1\n").unwrap_err();
    assert!(err.to_string().contains("gumbel"), "{err}");
}

/// Issue 22: every training sample records its surprise, the KL of the search target from the
/// root priors; with uniform priors over n legal moves that is ln n minus the target's entropy.
#[test]
fn samples_record_the_surprise_of_their_target_against_the_priors() {
    let games = play(&quick(31), 3);
    let mut checked = 0;
    let mut solved = 0;
    for g in &games {
        let mut pos = yari_rules::Position::from_fen(&g.start_fen).unwrap();
        let mut ply = 0;
        for s in &g.samples {
            while ply < s.ply as usize {
                pos.play(Move::from_u16(g.moves[ply]).unwrap());
                ply += 1;
            }
            let n = pos.legal_moves().len() as f64;
            let entropy: f64 = s
                .policy
                .iter()
                .filter(|e| e.1 > 0.0)
                .map(|e| -(e.1 as f64) * (e.1 as f64).ln())
                .sum();
            // A root the mate search solved was never shown to the network; its target is the
            // mating move alone and its surprise ln n, what the same formula gives for a
            // one-move target (see `yari_selfplay::surprise`).
            let played: Vec<_> = s.policy.iter().filter(|e| e.1 > 0.0).collect();
            if played.len() == 1 {
                let mut after = pos.clone();
                after.play(Move::from_u16(played[0].0).unwrap());
                solved += usize::from(after.legal_moves().is_empty());
            }
            let expect = (n.ln() - entropy).max(0.0);
            assert!(
                (s.surprise as f64 - expect).abs() < 1e-3 * (1.0 + expect),
                "ply {}: surprise {} expected {expect}",
                s.ply,
                s.surprise
            );
            checked += 1;
        }
    }
    assert!(checked > 0);
    assert!(
        solved > 0,
        "no root settled by a mate in one among {checked} samples"
    );
    assert!(games
        .iter()
        .flat_map(|g| &g.samples)
        .any(|s| s.surprise > 0.01));
}

/// Shards written before the surprise field (format version 1) still read, as surprise 0.
#[test]
fn version_1_shards_read_with_zero_surprise() {
    let games = play(&quick(33), 2);
    let mut payload = Vec::new();
    for g in &games {
        payload.extend_from_slice(&g.game_id.to_le_bytes());
        payload.extend_from_slice(&(g.start_fen.len() as u16).to_le_bytes());
        payload.extend_from_slice(g.start_fen.as_bytes());
        payload.extend_from_slice(&(g.moves.len() as u32).to_le_bytes());
        for m in &g.moves {
            payload.extend_from_slice(&m.to_le_bytes());
        }
        let code = |r: GameResult| match r {
            GameResult::Draw => 0u8,
            GameResult::WhiteWins => 1,
            GameResult::BlackWins => 2,
        };
        payload.push(code(g.result));
        payload.push(match g.end {
            GameEnd::Checkmate => 0,
            GameEnd::Stalemate => 1,
            GameEnd::Repetition => 2,
            GameEnd::PerpetualCheck => 3,
            GameEnd::PlyCap => 4,
            GameEnd::Resignation => 5,
        });
        payload.push(g.resignation_disabled as u8);
        payload.push(g.would_resign.map_or(255, code));
        payload.extend_from_slice(&(g.samples.len() as u32).to_le_bytes());
        for s in &g.samples {
            payload.extend_from_slice(&s.ply.to_le_bytes());
            payload.extend_from_slice(&s.root_value.to_le_bytes());
            payload.extend_from_slice(&(s.policy.len() as u16).to_le_bytes());
            for (m, p) in &s.policy {
                payload.extend_from_slice(&m.to_le_bytes());
                payload.extend_from_slice(&p.to_le_bytes());
            }
        }
    }
    let v1 = yari_io::frame::Format {
        magic: yari_selfplay::record::MAGIC,
        version: 1,
    };
    let bytes = v1.encode(games.len() as u32, payload.len() as u64, &payload);
    let back = decode_shard(&bytes).unwrap();
    let mut expect = games.clone();
    for g in &mut expect {
        for s in &mut g.samples {
            s.surprise = 0.0;
        }
    }
    assert_eq!(back, expect);
    assert!(games
        .iter()
        .flat_map(|g| &g.samples)
        .any(|s| s.surprise > 0.0));
    // A version this build does not know is still refused.
    let v9 = yari_io::frame::Format {
        magic: yari_selfplay::record::MAGIC,
        version: 9,
    };
    let bytes = v9.encode(games.len() as u32, payload.len() as u64, &payload);
    assert!(decode_shard(&bytes).is_err());
}

/// Priors and value that depend on the position (a hash of its FEN), recording the size of
/// every call: a pipeline that handed one game's evaluation to another would change games.
struct PositionHashEvaluator {
    calls: std::sync::Mutex<Vec<usize>>,
}

impl yari_search::Evaluator for PositionHashEvaluator {
    fn evaluate(&self, positions: &[&yari_rules::Position]) -> Vec<yari_search::Evaluation> {
        use std::hash::{Hash, Hasher};
        self.calls.lock().unwrap().push(positions.len());
        let hash = |x: &dyn Fn(&mut std::collections::hash_map::DefaultHasher)| {
            let mut h = std::collections::hash_map::DefaultHasher::new();
            x(&mut h);
            (h.finish() % 1000) as f32 / 1000.0
        };
        positions
            .iter()
            .map(|pos| {
                let fen = pos.fen();
                let moves = pos.legal_moves();
                let raw: Vec<f32> = moves
                    .iter()
                    .map(|m| 0.05 + hash(&|h| (&fen, m.to_u16()).hash(h)))
                    .collect();
                let total: f32 = raw.iter().sum();
                let win = 0.8 * hash(&|h| fen.hash(h));
                yari_search::Evaluation {
                    priors: moves
                        .iter()
                        .zip(raw)
                        .map(|(&m, p)| (m, p / total))
                        .collect(),
                    wdl: [win, 0.1, 0.9 - win],
                }
            })
            .collect()
    }
}

/// Pipelined groups search one group while another is evaluated; each game still gets the
/// evaluations of its own positions, so the games are the same whatever the grouping, and
/// every call holds one group's leaves.
#[test]
fn pipeline_groups_play_the_same_games() {
    let games = |groups: usize| {
        let config = SelfplayConfig {
            concurrent_games: 6,
            pipeline_groups: groups,
            eval_chunk: 64,
            ..quick(21)
        };
        let evaluator = PositionHashEvaluator {
            calls: std::sync::Mutex::new(Vec::new()),
        };
        let mut out = Vec::new();
        let stats = run_selfplay(&evaluator, &config, 10, RunOptions::default(), |g| {
            out.push(g);
            Ok(())
        })
        .unwrap();
        out.sort_by_key(|g| g.game_id);
        let calls = evaluator.calls.into_inner().unwrap();
        assert_eq!(stats.evaluations, calls.iter().sum::<usize>() as u64);
        assert_eq!(stats.batches, calls.len() as u64);
        let largest = calls.iter().copied().max().unwrap();
        assert!(
            largest <= 6usize.div_ceil(groups),
            "{groups} groups: a call of {largest}"
        );
        assert!((0.0..=1.0).contains(&stats.evaluator_idle_share()));
        (out, stats.evaluations)
    };
    let (lockstep, evaluations) = games(1);
    assert_eq!(lockstep.len(), 10);
    for groups in [2, 3] {
        let (pipelined, e) = games(groups);
        assert_eq!(pipelined, lockstep, "{groups} groups");
        assert_eq!(e, evaluations, "{groups} groups");
    }
}
