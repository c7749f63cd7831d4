//! Lua scripts that make multi-key changes atomic on the Redis server.

use std::sync::LazyLock;

use redis::{Script, ScriptInvocation};

/// ARGV: ns, id, dedupe (1/0), window ms, rank, packed message, task, correlation,
/// conversation, now (Unix ms), queues…; returns 1 when stored, 0 for a duplicate within the
/// window. Tasks and conversations are also kept in `ns:recent:<kind>` (a sorted set scored
/// by the latest publish time) and `ns:first:<kind>` (a hash of the first publish time).
static STORE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local ns, id, value = ARGV[1], ARGV[2], ARGV[6]
if ARGV[3] == '1' then
  if not redis.call('SET', ns .. ':seen:' .. id, '1', 'NX', 'PX', ARGV[4]) then
    return 0
  end
end
for i = 11, #ARGV do
  redis.call('XADD', ns .. ':q:' .. ARGV[i] .. ':' .. ARGV[5], '*', 'm', value)
end
local logs = { {'task', ARGV[7]}, {'corr', ARGV[8]}, {'conv', ARGV[9]} }
for _, log in ipairs(logs) do
  if log[2] ~= '' then
    redis.call('RPUSH', ns .. ':' .. log[1] .. ':' .. log[2], value)
    if log[1] ~= 'corr' then
      redis.call('ZADD', ns .. ':recent:' .. log[1], 'GT', ARGV[10], log[2])
      redis.call('HSETNX', ns .. ':first:' .. log[1], log[2], ARGV[10])
    end
  end
end
return 1
",
    )
});

/// ARGV: ns, dead-letter value, stream key (or empty), entry id; settles the entry (if any)
/// and records the dead letter; returns its id.
static DEAD: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local ns = ARGV[1]
if ARGV[3] ~= '' then
  redis.call('XACK', ARGV[3], 'workers', ARGV[4])
  redis.call('XDEL', ARGV[3], ARGV[4])
end
local n = redis.call('INCR', ns .. ':dead:seq')
redis.call('HSET', ns .. ':dead', n, ARGV[2])
return n
",
    )
});

/// ARGV: ns, handler, message id, committed value; returns 1 when first, 0 when already there.
static COMMIT: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local ns, handler, id = ARGV[1], ARGV[2], ARGV[3]
if redis.call('HSETNX', ns .. ':done:' .. handler, id, ARGV[4]) == 1 then
  redis.call('RPUSH', ns .. ':effects:' .. handler, id)
  return 1
end
return 0
",
    )
});

/// An invocation of the publish script.
pub(super) fn store() -> ScriptInvocation<'static> {
    STORE.prepare_invoke()
}

/// An invocation of the dead-letter script.
pub(super) fn dead() -> ScriptInvocation<'static> {
    DEAD.prepare_invoke()
}

/// An invocation of the commit-once script.
pub(super) fn commit() -> ScriptInvocation<'static> {
    COMMIT.prepare_invoke()
}
