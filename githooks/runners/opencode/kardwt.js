// kardwt's plugin for OpenCode, as `git kardwt runner install opencode` writes it to
// .opencode/plugin/kardwt.js (OpenCode loads every .js file in .opencode/plugin/ by itself).
// The guard: before each call of OpenCode's bash tool it asks `git kardwt guard` about the
// command, judged in the directory it runs in (the tool's workdir, else the project directory).
// A deny throws, which OpenCode gives the model as the tool's error, and the command never runs;
// a guard that cannot run denies too, never allows.
// The workspaces: OpenCode's experimental workspaces (OPENCODE_EXPERIMENTAL_WORKSPACES) of type
// "worktree" are made and dropped through kardwt instead of OpenCode's own `git worktree add
// --no-checkout` (which no git hook of kardwt's sees) and `git worktree remove --force` (which
// releases nothing and discards changes): a new workspace is `git kardwt add <its name>`,
// seeded and prepared before OpenCode records it (a failing prepare fails the creation), and
// removing one is `git kardwt remove --path <tree> --delete-branch`, which releases first (its
// processes, cleanup hook and ports); a tree kardwt keeps (uncommitted work, a refusal) is
// released all the same and the removal fails with kardwt's reason.
// The project copies: OpenCode's own (strategy git_worktree) are made with a plain `git worktree
// add`, which kardwt's post-checkout shim seeds, and removed with a plain `git worktree remove`,
// which no hook sees; OpenCode then publishes project.directories.updated (also after a copy is
// made). On it the plugin runs `git kardwt gc --prunable --apply --offline`, which releases the
// orphan such a removal leaves (its cleanup hook, its ports; as for every orphan, no process is
// signalled) and collects nothing live; one run at a time, quiet unless it fails, never failing
// OpenCode.
// kardwt-binary: `git kardwt` through the PATH, or the alias of `git kardwt runner install --user`.
import { execFile, spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { resolve } from "node:path";

// `git kardwt ARGS` in `cwd`, without blocking OpenCode: {status, stdout, stderr}; never throws.
const kardwt = (args, cwd) =>
  new Promise((done) =>
    execFile("git", ["kardwt", ...args], { cwd, encoding: "utf8", maxBuffer: 64 << 20 }, (error, stdout, stderr) =>
      done({
        status: error ? (typeof error.code === "number" ? error.code : -1) : 0,
        stdout: stdout ?? "",
        stderr: (stderr ?? "").trim() || (error ? error.message : ""),
      }),
    ),
  );

// OpenCode's "worktree" workspace adapter, run by kardwt (see above). `directory` is the
// project directory the plugin was loaded for.
const worktrees = (project, directory) => ({
  name: "Worktree",
  description: "Create a git worktree with git kardwt (seeded and prepared; released before it is removed)",
  async configure(info) {
    const made = await kardwt(["add", info.name], directory);
    const path = made.stdout.trim().split("\n").pop();
    if (made.status !== 0 || !path) {
      throw new Error(made.stderr || `git kardwt add ${info.name} failed (exit ${made.status})`);
    }
    return { ...info, directory: path };
  },
  async create(info) {
    if (!info.directory || !existsSync(info.directory)) {
      throw new Error(`git kardwt made no tree for workspace ${info.name}`);
    }
  },
  async list() {
    const listed = await kardwt(["list", "--json"], directory);
    if (listed.status !== 0) return [];
    return JSON.parse(listed.stdout)
      .filter((row) => typeof row.card === "string" && typeof row.path === "string" && row.state !== "orphan")
      .map((row) => ({
        type: "worktree",
        name: row.card,
        branch: row.branch ?? null,
        directory: row.path,
        projectID: project.id,
      }));
  },
  async remove(info) {
    const tree = info.directory;
    if (!tree) return;
    const gone = await kardwt(["remove", "--path", tree, "--delete-branch"], directory);
    if (gone.status === 0) return;
    // Kept (uncommitted work, a refusal) or already deleted: release what it holds anyway.
    const released = await kardwt(["release", "--path", tree], directory);
    if (!existsSync(tree) && released.status === 0) return;
    // OpenCode drops the workspace whatever its adapter says, and logs no reason: say it here.
    const why = `kept ${tree}: ${gone.stderr}`.replace(/\s*\n\s*/g, " ");
    const line = released.status === 0 ? `${why} (released)` : `${why}; releasing it failed too: ${released.stderr}`;
    console.error(`kardwt: ${line}`);
    throw new Error(line);
  },
  target(info) {
    return { type: "local", directory: info.directory };
  },
});

// `git kardwt gc --prunable --apply --offline` for the project (see above), one run at a time: a
// call while one runs runs it once more after. Never throws; says on stderr only when it failed.
const collector = (project, directory) => {
  let running = false;
  let again = false;
  return async () => {
    if (running) {
      again = true;
      return;
    }
    running = true;
    try {
      do {
        again = false;
        // The directory OpenCode runs in may be the copy it just removed: then the project's.
        const cwd = [directory, project?.worktree].find((dir) => typeof dir === "string" && existsSync(dir));
        if (!cwd) return;
        const gc = await kardwt(["gc", "--prunable", "--apply", "--offline"], cwd);
        if (gc.status !== 0) {
          const why = gc.stderr.replace(/\s*\n\s*/g, " ");
          console.error(`kardwt: git kardwt gc --prunable --apply --offline in ${cwd} failed: ${why}`);
        }
      } while (again);
    } catch (error) {
      console.error(`kardwt: git kardwt gc could not run: ${error?.message ?? error}`);
    } finally {
      running = false;
    }
  };
};

export const KardwtGuard = async ({ directory, project, experimental_workspace }) => {
  if (project?.id && typeof experimental_workspace?.register === "function") {
    experimental_workspace.register("worktree", worktrees(project, directory));
  }
  const collect = collector(project, directory);
  return {
    // A project copy made or removed (a plain `git worktree add`/`remove`): release what a
    // removal left.
    event: ({ event }) => {
      if (event?.type === "project.directories.updated") void collect();
    },
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
  };
};
