// kardwt's guard for OpenCode, as `git kardwt runner install opencode` writes it to
// .opencode/plugin/kardwt.js (OpenCode loads every .js file in .opencode/plugin/ by itself).
// Before each call of OpenCode's bash tool it asks `git kardwt guard` about the command, judged
// in the directory it runs in (the tool's workdir, else the project directory). A deny throws,
// which OpenCode gives the model as the tool's error, and the command never runs; a guard that
// cannot run denies too, never allows.
// kardwt-binary: `git kardwt` through the PATH, or the alias of `git kardwt runner install --user`.
import { spawnSync } from "node:child_process";
import { resolve } from "node:path";

export const KardwtGuard = async ({ directory }) => ({
  "tool.execute.before": async (input, output) => {
    if (input.tool !== "bash") return;
    const args = output.args ?? {};
    if (typeof args.command !== "string") return;
    const cwd = resolve(directory, typeof args.workdir === "string" ? args.workdir : ".");
    const guard = spawnSync(
      "git",
      ["kardwt", "guard", "--format", "text", "--command", args.command, "--cwd", cwd],
      { cwd: directory, encoding: "utf8" },
    );
    if (guard.status === 0) return;
    const why = (guard.stderr ?? "").trim();
    throw new Error(
      why || `denied: git kardwt guard could not run (${guard.error?.message ?? `exit ${guard.status}`})`,
    );
  },
});
