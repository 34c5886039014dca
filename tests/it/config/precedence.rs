//! Precedence: the command line beats the environment, which beats the project file, which
//! beats the user file, for every key on its own.

use super::keys::{KEYS, Key, LAYERS, Layer, up_to};
use super::world::World;

/// Each key of the script shows the value of the highest layer that gives it, and no other.
#[test]
fn command_line_beats_environment_beats_project_file_beats_user_file() {
    type Given = Box<dyn Fn(&Key) -> Vec<Layer>>;
    let cases: Vec<(&str, Given)> = vec![
        ("the user file alone", Box::new(|_| up_to(Layer::User))),
        ("project over user", Box::new(|_| up_to(Layer::Project))),
        ("environment over files", Box::new(|_| up_to(Layer::Env))),
        ("command line over all", Box::new(|_| up_to(Layer::Cli))),
        ("the project file alone", Box::new(|_| vec![Layer::Project])),
        ("the environment alone", Box::new(|_| vec![Layer::Env])),
        // Each key is resolved on its own: the keys' winners differ within one launch.
        (
            "a different top for each key",
            Box::new(|k| {
                let at = KEYS.iter().position(|o| o.file == k.file).unwrap();
                up_to(LAYERS[at % LAYERS.len()])
            }),
        ),
    ];
    let world = World::new();
    for (case, given) in &cases {
        let script = world.launch(given);
        let mut wrong = Vec::new();
        for key in KEYS {
            let layers: Vec<Layer> = given(key).into_iter().filter(|l| key.has(*l)).collect();
            let Some(winner) = LAYERS.into_iter().find(|l| layers.contains(l)) else {
                continue;
            };
            let want = (key.shown)(key.value(winner));
            if !script.contains(&want) {
                wrong.push(format!(
                    "{} from {winner:?}: no `{}`",
                    key.file,
                    want.trim()
                ));
            }
            for loser in layers.iter().filter(|l| **l != winner) {
                let not = (key.shown)(key.value(*loser));
                if not != want && script.contains(&not) {
                    wrong.push(format!("{} from {loser:?}: `{}`", key.file, not.trim()));
                }
            }
        }
        assert!(wrong.is_empty(), "{case}: {wrong:#?}\n{script}");
    }
}
