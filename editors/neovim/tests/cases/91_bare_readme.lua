-- The README's Neovim snippet for qwen-ls without the plugin, run as a
-- newcomer runs it: a child Neovim started with -u NONE, the snippet read
-- from README.md (so the two cannot drift) and run as it is, the file
-- opened with :edit, lines selected in Visual mode and the snippet's `gra`
-- typed, the action picked in Neovim's own menu (inputlist) by its
-- number. Keys arrive through nvim_input, read by the child's main loop as
-- a terminal's would be. Nothing of the child's LSP client is replaced.

-- The Lua block under the README's "Neovim 0.10 or later without the
-- plugin".
local function readme_snippet(H)
  local text = assert(H.read(H.repo .. '/README.md'), 'README.md')
  local at = text:find('Neovim 0.10 or later without the plugin', 1, true)
  H.ok(at, 'the README section "Neovim 0.10 or later without the plugin"')
  local code = text:match('```lua\n(.-\n)```', at)
  H.ok(code, 'a Lua block in that section')
  return code
end

-- Starts the child in the workspace, with `qwen-ls` on its PATH and the
-- scripted model in its environment, as a user's shell would have them.
local function start_child(H)
  local bin = vim.fn.tempname()
  vim.fn.mkdir(bin, 'p')
  H.ok(vim.loop.fs_symlink(H.bin, bin .. '/qwen-ls'), 'qwen-ls on the PATH')
  local chan = vim.fn.jobstart({ H.nvim, '--embed', '--headless', '-u', 'NONE', '-i', 'NONE', '-n' }, {
    rpc = true,
    cwd = H.ws,
    env = {
      PATH = bin .. ':' .. os.getenv('PATH'),
      HOME = H.home,
      OPENAI_BASE_URL = H.current_model.url,
      OPENAI_MODEL = 'scripted',
      OPENAI_API_KEY = 'sk-test',
    },
  })
  H.ok(chan > 0, 'the child Neovim to start')
  H.defer(function()
    pcall(vim.rpcrequest, chan, 'nvim_exec_lua', [[
      for _, c in ipairs(vim.lsp.get_clients()) do c.stop() end
      vim.wait(3000, function() return #vim.lsp.get_clients() == 0 end, 20)
    ]], {})
    vim.fn.jobstop(chan)
    vim.fn.delete(bin, 'rf')
  end)
  return chan
end

-- What the person has in front of them: the current window's file, the
-- mode, the code buffer's and the transcript buffer's state, :messages.
local child_state = [[
  local code_path, transcript = ...
  local code = vim.fn.bufnr(code_path)
  local tr = transcript and vim.fn.bufnr(transcript) or -1
  local out = {
    current = vim.api.nvim_buf_get_name(0),
    mode = vim.api.nvim_get_mode().mode,
    code_modified = vim.bo[code].modified,
    windows = #vim.api.nvim_tabpage_list_wins(0),
    messages = vim.fn.execute('messages'),
  }
  if tr > 0 and vim.api.nvim_buf_is_loaded(tr) then
    out.transcript = {
      text = table.concat(vim.api.nvim_buf_get_lines(tr, 0, -1, false), '\n') .. '\n',
      modified = vim.bo[tr].modified,
      windows = #vim.fn.win_findbuf(tr),
      attached = vim.lsp.buf_is_attached(tr, vim.lsp.get_clients({ name = 'qwen-ls' })[1].id),
    }
  end
  return out
]]

-- The user message of the model's request n.
local function prompt_of(H, n)
  local req = H.requests()[n]
  H.ok(req, 'model request ' .. n)
  local user
  for _, m in ipairs(req.messages) do
    if m.role == 'user' then
      user = type(m.content) == 'string' and m.content or vim.inspect(m.content)
    end
  end
  return user
end

return {
  {
    name = "bare LSP, the README's snippet: two code actions on three selected lines; the transcript on disk holds each answer; no buffer left modified; :messages quiet",
    run = function(H)
      if vim.fn.has('nvim-0.10') == 0 then
        H.skip('the snippet is for Neovim 0.10 or later')
      end
      H.workspace()
      H.model('plain-two-asks.txtar')
      local snippet = readme_snippet(H)
      local chan = start_child(H)
      local function lua(code, ...)
        return vim.rpcrequest(chan, 'nvim_exec_lua', code, { ... })
      end
      local function input(keys)
        vim.rpcrequest(chan, 'nvim_input', keys)
      end
      -- The snippet, exactly, then the file, as :luafile and :edit would.
      lua(snippet)
      input(':edit calc/calc.go<CR>')
      local code_path = H.ws .. '/calc/calc.go'
      H.wait(15000, function()
        return lua([[
          local c = vim.lsp.get_clients({ name = 'qwen-ls' })[1]
          return c ~= nil and c.initialized == true and vim.lsp.buf_is_attached(0, c.id)
        ]])
      end, 'qwen-ls to attach to calc/calc.go')

      local transcript
      local asks = {
        {
          keys = '4GVjjgra',
          pick = '1', -- Qwen: explain
          head = 'Explain this code from calc/calc.go (lines 4-6)',
          quote = '```go\nfunc Add(a, b int) int {\n\treturn a + b\n}\n```',
          answer = 'Add returns the sum of its two arguments.\n\nIt takes two ints and adds them; nothing else happens.',
          request = 1,
        },
        {
          keys = '9GVjjgra',
          pick = '2', -- Qwen: fix this
          head = 'Fix this code in calc/calc.go (lines 9-11)',
          quote = '```go\nfunc Scale(prices []int, factor int) []int {\n\tout := make([]int, len(prices))\n\tfor i, p := range prices {\n```',
          answer = 'The loop is fine: each price is multiplied by factor.\n\nNothing to fix there.',
          request = 3,
        },
      }
      for i, ask in ipairs(asks) do
        -- Select three lines and open the code actions with the mapping;
        -- the menu waits for a number (the child blocks on input).
        input(ask.keys)
        H.wait(10000, function()
          return vim.rpcrequest(chan, 'nvim_get_mode').blocking
        end, 'the code action menu (turn ' .. i .. ')')
        input(ask.pick .. '<CR>')
        -- The turn ends with its one-line message.
        local first = ask.answer:match('^[^\n]*')
        H.wait(20000, function()
          return lua([[return vim.fn.execute('messages')]]):find('qwen: ' .. first, 1, true) ~= nil
        end, 'the answer of turn ' .. i .. ' in :messages')
        input('<Esc>')

        -- The prompt quotes all three selected lines.
        local user = prompt_of(H, ask.request)
        H.contains(user, ask.head, 'turn ' .. i .. ': the prompt names the lines')
        H.contains(user, ask.quote, 'turn ' .. i .. ': the prompt quotes the three lines')

        -- The transcript file on disk holds the turn and its answer.
        local files = vim.fn.glob(H.home .. '/.qwen/transcripts/*/*.md', false, true)
        H.eq(1, #files, 'one transcript')
        transcript = files[1]
        local disk = H.read(transcript)
        H.contains(disk, '## You\n\n' .. ask.head, 'turn ' .. i .. ': the prompt on disk')
        H.contains(disk, ask.answer .. '\n\n## You\n', 'turn ' .. i .. ': the answer on disk')

        -- The person is still in the code, which nothing changed; the
        -- transcript is open beside it, unmodified, showing the file.
        local st = lua(child_state, code_path, transcript)
        H.eq(code_path, st.current, 'turn ' .. i .. ': the cursor stays in the code')
        H.eq('n', st.mode, 'turn ' .. i .. ': Normal mode after <Esc>')
        H.eq(false, st.code_modified, 'turn ' .. i .. ': the code buffer is not modified')
        H.ok(st.transcript, 'turn ' .. i .. ': the transcript is loaded')
        H.eq(false, st.transcript.modified, 'turn ' .. i .. ': the transcript buffer is not modified')
        H.eq(1, st.transcript.windows, 'turn ' .. i .. ': the transcript in one window')
        H.eq(2, st.windows, 'turn ' .. i .. ': the code and the transcript side by side')
        H.eq(disk, st.transcript.text, 'turn ' .. i .. ': the transcript buffer shows the file')
        H.eq(true, st.transcript.attached, 'turn ' .. i .. ': qwen-ls serves the transcript (to ask in it)')
      end

      -- :messages holds one line per answer, and no "Workspace edit".
      local messages = lua(child_state, code_path, transcript).messages
      H.ok(not messages:find('Workspace edit', 1, true), 'no "Workspace edit" in :messages:\n' .. messages)
      local ours = {}
      for line in messages:gmatch('[^\n]+') do
        if line:find('qwen', 1, true) then
          table.insert(ours, line)
        end
      end
      H.eq({
        'LSP[qwen-ls][Info] qwen: Add returns the sum of its two arguments. …',
        'LSP[qwen-ls][Info] qwen: The loop is fine: each price is multiplied by factor. …',
      }, ours, "qwen-ls's lines in :messages")
    end,
  },
}
