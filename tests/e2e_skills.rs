//! End-to-end: skills (issue 17). Only a skill's name and description reach the model until
//! it calls Skill; then it gets the instructions and the skill's files. A project's skills
//! count only once the directory is trusted.

use crate::common;

use common::{Sandbox, bodies, request_tool_results, server};
use serde_json::json;

#[tokio::test]
async fn a_skill_is_described_up_front_and_loaded_only_when_called() {
    let sb = Sandbox::new();
    sb.write(
        ".claude/skills/pdf/SKILL.md",
        "---\nname: pdf\ndescription: Fill in PDF forms\n---\nSECRET-STEPS: run fill.py on the form.\n",
    );
    sb.write(".claude/skills/pdf/fill.py", "print('filled')\n");
    let mock = server(json!({"turns": [
        {"content": [{"type": "text", "text": "ready"}]},
        {"content": [{"type": "tool_use", "name": "Skill", "input": {"skill": "pdf"}}]},
        {"content": [{"type": "text", "text": "filled"}]}
    ]}))
    .await;
    let run = sb
        .run(&mock.url(), &["-p", "--trust-project", "hello"])
        .await;
    assert!(run.status.success(), "{}", run.debug());
    let first = &bodies(&mock)[0];
    let skill = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "Skill")
        .expect("Skill is offered");
    assert!(
        skill["description"]
            .as_str()
            .unwrap()
            .contains("- pdf: Fill in PDF forms")
    );
    assert!(
        !first.to_string().contains("SECRET-STEPS"),
        "the body waits"
    );

    let run = sb
        .run(&mock.url(), &["-p", "--trust-project", "fill the form"])
        .await;
    assert!(run.status.success(), "{}", run.debug());
    let loaded = request_tool_results(&bodies(&mock)[2]);
    let text = loaded[0]["content"].as_str().unwrap();
    assert!(text.contains("SECRET-STEPS: run fill.py"), "{text}");
    assert!(text.contains("skills/pdf/fill.py"), "{text}");

    // Untrusted, the project's skills are not offered at all.
    let mock = server(json!({"turns": [{"content": [{"type": "text", "text": "hi"}]}]})).await;
    let run = sb.run(&mock.url(), &["-p", "hello"]).await;
    assert!(run.status.success(), "{}", run.debug());
    assert!(!bodies(&mock)[0]["tools"].to_string().contains("\"Skill\""));
    assert!(
        run.stderr.contains("the skills in .claude/skills"),
        "{}",
        run.stderr
    );
}
