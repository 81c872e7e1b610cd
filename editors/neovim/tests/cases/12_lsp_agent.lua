-- The agent's lsp tool in Neovim, end to end: qwen-ls asks the plugin
-- (qwen/lsp) and the plugin asks the person's own gopls, attached to the
-- Go buffers the way a user's config does it. The scripted model
-- (testdata/scripts/lsp-gopls.txtar) asks for a definition and
-- diagnostics, then breaks the build; the tool results it is sent must
-- hold gopls's answers, and qwen-ls must start no gopls of its own, though
-- the folder is trusted and it could.

-- The gopls processes among pids: those whose program is gopls (gopls's
-- own telemetry helper runs as "gopls ** telemetry **", a child of it).
local function goplses(H, pids)
  local out = {}
  for _, p in ipairs(pids) do
    local argv0 = (H.read('/proc/' .. p .. '/cmdline') or ''):match('^[^%z]*')
    if H.cmdline(p) and vim.fn.fnamemodify(argv0, ':t') == 'gopls' then
      table.insert(out, p)
    end
  end
  return out
end

-- The direct children of pid.
local function children(H, pid)
  return vim.tbl_filter(function(p)
    local stat = H.read('/proc/' .. p .. '/stat')
    return stat and stat:match('^%d+ %b() %a (%d+)') == tostring(pid)
  end, H.descendants(pid))
end

-- qwen-ls's process: this Neovim's child running the test binary.
local function server_pid(H)
  for _, p in ipairs(H.descendants(vim.fn.getpid())) do
    local cmd = H.cmdline(p)
    if cmd and cmd:find(H.bin .. ' --stdio', 1, true) then
      return p
    end
  end
end

return {
  {
    name = "lsp agent: definitions and diagnostics come from Neovim's gopls, and an edit that breaks the build shows undefined",
    run = function(H)
      H.workspace()
      H.trust()
      H.model('lsp-gopls.txtar')
      local gopls = H.attach_gopls()
      -- gopls on qwen-ls's PATH too: it could start its own, and must not
      local dir = vim.fn.fnamemodify(H.gopls(), ':h')
      H.setup({ approval_mode = 'yolo', cmd_env = { PATH = dir .. ':' .. os.getenv('PATH') } })
      vim.cmd('edit main.go')
      local buf = vim.api.nvim_get_current_buf()
      local qwen = H.wait_client()
      local g = gopls()
      H.ok(vim.lsp.buf_is_attached(buf, g.id) and vim.lsp.buf_is_attached(buf, qwen.id), 'gopls and qwen-ls attached to main.go')
      vim.cmd('QwenAsk Where is Add defined, and is the build fine?')
      local res = H.wait_turn(120000)
      H.eq('end_turn', res.stopReason, 'stop reason')

      local def = H.ok(H.tool_result('call_def'), 'the goToDefinition result')
      H.contains(def, 'calc/calc.go:4:6', 'the definition: func Add on line 4 of calc/calc.go')
      H.contains(def, 'func Add(a, b int) int', 'with its line')
      H.contains(def, "(the editor's gopls)", "answered by Neovim's gopls")
      local diag = H.ok(H.tool_result('call_diag'), 'the diagnostics result')
      H.ok(not diag:find('undefined', 1, true), 'no errors before the edit: ' .. diag)
      local edit = H.ok(H.tool_result('call_edit'), 'the edit result')
      H.contains(edit, "The editor's gopls reports 1 new error after this change", "Neovim's gopls judged the edit")
      H.contains(edit, 'undefined: calc.Sub', "the compiler's verdict in the edit's result")
      local diag2 = H.ok(H.tool_result('call_diag2'), 'the diagnostics after the edit')
      H.contains(diag2, 'undefined: calc.Sub', 'the diagnostics of the edited buffer')
      H.contains(diag2, 'main.go:10', 'on line 10 of main.go')
      H.contains(require('qwen.util').buf_text(buf), 'calc.Sub(2, 3)', 'the edit in the buffer')
      if os.getenv('QWEN_TEST_VERBOSE') then
        H.log('goToDefinition:\n' .. def .. '\ndiagnostics:\n' .. diag .. '\nedit:\n' .. edit .. '\ndiagnostics after:\n' .. diag2)
      end

      -- The only gopls is Neovim's own child; none runs under qwen-ls.
      local server = H.ok(server_pid(H), "qwen-ls's process")
      H.eq({}, goplses(H, H.descendants(server)), 'gopls processes under qwen-ls (pid ' .. server .. ')')
      local mine = goplses(H, children(H, vim.fn.getpid()))
      H.eq(1, #mine, "one gopls started by Neovim: " .. vim.inspect(vim.tbl_map(H.cmdline, mine)))
      local all = goplses(H, H.descendants(vim.fn.getpid()))
      for _, p in ipairs(all) do
        H.ok(p == mine[1] or vim.tbl_contains(H.descendants(mine[1]), p),
          'every gopls to be Neovim\'s or its helpers: ' .. vim.inspect(vim.tbl_map(H.cmdline, all)))
      end
    end,
  },
}
