-- The test runner: runs every case of tests/cases/*.lua (or those whose
-- name contains $QWEN_TEST_FILTER) in this Neovim, prints one line per case
-- and "N passed, N failed", and exits non-zero on any failure.
local here = vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h')
package.path = here .. '/?.lua;' .. package.path
local H = require('helpers')
local filter = os.getenv('QWEN_TEST_FILTER') or ''

local function out(s)
  io.stdout:write(s .. '\n')
  io.stdout:flush()
end

-- Any error message the plugin shows counts as a failure of the case.
local plugin_errors = {}
local orig_notify = vim.notify
vim.notify = function(msg, level, opts)
  if level and level >= vim.log.levels.ERROR then
    table.insert(plugin_errors, tostring(msg))
  end
  if os.getenv('QWEN_TEST_VERBOSE') then
    out('    notify: ' .. tostring(msg))
  end
end

local cases = {}
local files = vim.fn.globpath(here .. '/cases', '*.lua', false, true)
table.sort(files)
for _, f in ipairs(files) do
  local mod = dofile(f)
  for _, c in ipairs(mod) do
    if filter == '' or c.name:find(filter, 1, true) then
      table.insert(cases, c)
    end
  end
end

local passed, failed, skipped = 0, 0, 0
local orig_select, orig_input = vim.ui.select, vim.ui.input
for _, c in ipairs(cases) do
  plugin_errors = {}
  vim.v.errmsg = ''
  vim.ui.select, vim.ui.input = orig_select, orig_input
  local t0 = vim.loop.hrtime()
  local ok, err = xpcall(c.run, function(e)
    if type(e) == 'table' and e.skip then
      return e
    end
    return debug.traceback(e)
  end, H)
  if vim.v.errmsg ~= '' then
    table.insert(plugin_errors, vim.v.errmsg)
  end
  if ok and #plugin_errors > 0 and not c.allow_errors then
    ok, err = false, 'the plugin reported errors:\n  ' .. table.concat(plugin_errors, '\n  ')
  end
  H.cleanup()
  local ms = math.floor((vim.loop.hrtime() - t0) / 1e6)
  if not ok and type(err) == 'table' and err.skip then
    skipped = skipped + 1
    out(string.format('skip  %s: %s', c.name, err.skip))
  elseif ok then
    passed = passed + 1
    out(string.format('ok    %s (%d ms)', c.name, ms))
  else
    failed = failed + 1
    out(string.format('FAIL  %s (%d ms)', c.name, ms))
    out('      ' .. tostring(err):gsub('\n', '\n      '))
  end
end
vim.notify = orig_notify
if skipped > 0 then
  out(string.format('%d passed, %d failed, %d skipped', passed, failed, skipped))
else
  out(string.format('%d passed, %d failed', passed, failed))
end
if failed > 0 or passed + skipped == 0 then
  vim.cmd('cquit 1')
else
  vim.cmd('qall!')
end
