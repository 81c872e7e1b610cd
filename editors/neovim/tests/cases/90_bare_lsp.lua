-- qwen-ls from an editor that knows only LSP: a child Neovim started with
-- -u NONE and WITHOUT the plugin, whose built-in client is started by hand
-- (vim.lsp.start on 0.10, vim.lsp.start_client + buf_attach_client on 0.7),
-- as a Helix, Kate or eglot user has it.

-- The child's side, run in it through nvim_exec_lua. It records what the
-- server shows and answers every edit confirmation with "Allow".
local child_setup = [[
local bin, ws, env, attach_all = ...
_G.rec = { messages = {}, asked = {}, actions = {}, shown = {}, titles = {} }
vim.cmd('cd ' .. vim.fn.fnameescape(ws))
vim.cmd('edit calc/calc.go')
local handlers = vim.lsp.handlers
handlers['window/showMessage'] = function(_, result)
  table.insert(rec.messages, result.message)
end
handlers['window/showMessageRequest'] = function(_, result)
  table.insert(rec.asked, result.message)
  local titles = {}
  for _, a in ipairs(result.actions or {}) do
    table.insert(titles, a.title)
  end
  table.insert(rec.actions, titles)
  for _, a in ipairs(result.actions or {}) do
    if a.title == 'Allow' then
      return a
    end
  end
  return vim.NIL
end
local show = handlers['window/showDocument']
if show then
  handlers['window/showDocument'] = function(err, result, ctx, cfg)
    table.insert(rec.shown, result)
    return show(err, result, ctx, cfg)
  end
end
-- The person picks the action named _G.pick in the code action menu.
vim.ui.select = function(items, opts, on_choice)
  rec.titles = {}
  local chosen, idx
  for i, it in ipairs(items) do
    local title = opts.format_item and opts.format_item(it) or tostring(it)
    table.insert(rec.titles, title)
    if title == _G.pick and not chosen then
      chosen, idx = it, i
    end
  end
  on_choice(chosen, idx)
end
local config = { name = 'qwen-ls', cmd = { bin, '--stdio' }, cmd_env = env, root_dir = ws }
if vim.lsp.start then
  rec.id = vim.lsp.start(config)
else
  rec.id = vim.lsp.start_client(config)
  vim.lsp.buf_attach_client(0, rec.id)
end
if attach_all then
  -- A user whose client serves Markdown too: every buffer is attached,
  -- so the transcript's didOpen and didSave reach the server. The
  -- transcript is written on disk as a turn runs: it is read again on
  -- each progress notification (LspProgress on 0.10, as the README's
  -- snippet does; User LspProgressUpdate on 0.7).
  vim.api.nvim_create_autocmd('BufEnter', {
    callback = function(a)
      if vim.bo[a.buf].buftype == '' then
        vim.lsp.buf_attach_client(a.buf, rec.id)
      end
    end,
  })
  if vim.fn.has('nvim-0.10') == 1 then
    vim.api.nvim_create_autocmd('LspProgress', { command = 'checktime' })
  else
    vim.api.nvim_create_autocmd('User', { pattern = 'LspProgressUpdate', command = 'checktime' })
  end
end
return vim.wait(15000, function()
  local c = vim.lsp.get_client_by_id(rec.id)
  return c ~= nil and c.initialized == true
end, 20)
]]

-- Picks an action from the code action menu over lines l1..l2 (1-based).
local child_code_action = [[
local title, l1, l2 = ...
_G.pick = title
if vim.fn.has('nvim-0.8') == 1 then
  vim.lsp.buf.code_action({ range = { start = { l1, 0 }, ['end'] = { l2, 0 } } })
else
  vim.lsp.buf.range_code_action(nil, { l1, 0 }, { l2, 0 })
end
return vim.wait(5000, function()
  return #rec.titles > 0
end, 20)
]]

local function start_child(H, attach_all)
  local chan = vim.fn.jobstart({ H.nvim, '--embed', '--headless', '-u', 'NONE', '-i', 'NONE', '-n' }, { rpc = true })
  H.ok(chan > 0, 'the child Neovim to start')
  H.defer(function()
    pcall(vim.rpcrequest, chan, 'nvim_exec_lua', [[
      for _, c in ipairs(vim.lsp.get_active_clients()) do c.stop() end
      vim.wait(3000, function() return #vim.lsp.get_active_clients() == 0 end, 20)
    ]], {})
    vim.fn.jobstop(chan)
  end)
  local env = {
    HOME = H.home,
    OPENAI_BASE_URL = H.current_model.url,
    OPENAI_MODEL = 'scripted',
    OPENAI_API_KEY = 'sk-test',
  }
  local ok = vim.rpcrequest(chan, 'nvim_exec_lua', child_setup, { H.bin, H.ws, env, attach_all })
  H.ok(ok, 'qwen-ls to initialize in the child Neovim')
  local child = {}
  function child.lua(code, ...)
    return vim.rpcrequest(chan, 'nvim_exec_lua', code, { ... })
  end
  function child.rec()
    return child.lua('return _G.rec')
  end
  -- Waits from here, asking the child in short requests: a child held in
  -- a long vim.wait would not run its main loop, where Neovim reads a
  -- changed file again.
  function child.wait_message(needle, ms)
    local t0 = vim.loop.hrtime()
    local found = vim.wait(ms or 20000, function()
      for _, m in ipairs(child.rec().messages) do
        if m:find(needle, 1, true) then
          return true
        end
      end
      return false
    end, 20)
    if not found then
      error('no window/showMessage with ' .. vim.inspect(needle) .. '; got ' .. vim.inspect(child.rec().messages), 2)
    end
    return (vim.loop.hrtime() - t0) / 1e6
  end
  return child
end

-- Sends a prompt as `qwen-ls.prompt` with its text and waits for the
-- command's answer.
local child_prompt = [[
  local text = ...
  local c = vim.lsp.get_client_by_id(rec.id)
  local out
  c.request('workspace/executeCommand', { command = 'qwen-ls.prompt', arguments = { text } }, function(err, result)
    out = { err = err, result = result }
  end, 0)
  vim.wait(20000, function() return out ~= nil end, 20)
  return out
]]

local function transcripts(H)
  return vim.fn.glob(H.home .. '/.qwen/transcripts/*/*.md', false, true)
end

return {
  {
    name = 'bare LSP: a code action runs a prompt; the answer is shown; the edit confirmation carries the diff',
    run = function(H)
      H.workspace()
      H.model('edit-two-hunks.txtar')
      local child = start_child(H, false)
      H.ok(child.lua(child_code_action, 'Qwen: fix this', 11, 13), 'the code action menu to open')
      local ms = child.wait_message('qwen: Done reviewing')
      H.log(string.format('code action to answer: %.0f ms', ms))
      local rec = child.rec()
      H.eq({ 'Qwen: explain', 'Qwen: fix this', 'Qwen: ask about selection…' }, rec.titles, 'the code actions')

      -- The edit confirmation: the path once, the counts, the diff.
      H.eq(1, #rec.asked, 'one edit confirmation')
      local msg = rec.asked[1]
      H.contains(msg, 'qwen-ls wants to edit calc/calc.go (+2 -2):', 'the head')
      H.contains(msg, '\n-// Add returns the sum of a and b.\n+// Add returns a + b.', 'hunk 1 of the diff')
      H.contains(msg, '\n-\t\tout[i] = p * factor\n+\t\tout[i] = p * factor / 100', 'hunk 2 of the diff')
      local _, n = msg:gsub('calc/calc%.go', '')
      H.eq(1, n, 'the path is named once')
      H.ok(not msg:find(H.ws, 1, true), 'no absolute path')

      -- The allowed edit is in the buffer (the file is open, so the
      -- server changed it through workspace/applyEdit, and said nothing of
      -- a disk write).
      local calc = child.lua([[
        local b = vim.fn.bufnr(vim.fn.getcwd() .. '/calc/calc.go')
        return table.concat(vim.api.nvim_buf_get_lines(b, 0, -1, false), '\n')
      ]])
      H.contains(calc, 'out[i] = p * factor / 100', 'the accepted edit in the buffer')
      for _, m in ipairs(rec.messages) do
        H.ok(not m:find('qwen-ls wrote', 1, true), 'no disk-write notice for an open buffer: ' .. m)
      end

      -- The transcript on disk holds the whole turn.
      local files = transcripts(H)
      H.eq(1, #files, 'one transcript')
      local text = H.read(files[1])
      H.contains(text, '## You\n\nFix this code in calc/calc.go (lines 11-12)', 'the prompt')
      H.contains(text, '## qwen\n\n- ✓ ', 'the tool lines')
      H.contains(text, 'Done reviewing; see the tool result for what was applied.\n\n## You\n', 'the answer')

      if #rec.shown > 0 then
        -- 0.10: the transcript was shown beside the code, which kept the
        -- focus; read again (this user has no reload on progress: their
        -- Neovim does it on focus, here :checktime) it shows the answer,
        -- and it is not modified.
        for _, d in ipairs(rec.shown) do
          H.eq(vim.uri_from_fname(files[1]), d.uri, 'the shown document')
          H.eq(false, d.takeFocus, 'takeFocus')
        end
        local shown = child.lua([[
          local path = ...
          vim.cmd('checktime')
          local b = vim.fn.bufnr(path)
          return {
            vim.api.nvim_buf_get_name(0),
            table.concat(vim.api.nvim_buf_get_lines(b, 0, -1, false), '\n'),
            #vim.fn.win_findbuf(b),
            vim.bo[b].modified,
          }
        ]], files[1])
        H.eq(vim.fn.fnamemodify(H.ws .. '/calc/calc.go', ':p'), shown[1], 'the current buffer is still the code')
        H.eq(1, shown[3], 'the transcript in a window of its own')
        H.contains(shown[2], 'Done reviewing; see the tool result for what was applied.', 'the answer in the shown document')
        H.eq(false, shown[4], 'the transcript is not modified')
      else
        H.ok(vim.fn.has('nvim-0.8') == 0, 'only 0.7 lacks window/showDocument')
      end
    end,
  },
  {
    name = 'bare LSP: the transcript is the chat: a question saved under "## You" is answered in the file, which the buffer shows',
    run = function(H)
      H.workspace()
      H.model('chat.txtar')
      local child = start_child(H, true)
      -- The command without text answers what to do, not -32602.
      local t0 = vim.loop.hrtime()
      local res = child.lua([[
        local c = vim.lsp.get_client_by_id(rec.id)
        local out
        c.request('workspace/executeCommand', { command = 'qwen-ls.prompt', arguments = {} }, function(err, result)
          out = { err = err, result = result }
        end, 0)
        vim.wait(5000, function() return out ~= nil end, 20)
        return out
      ]])
      H.log(string.format('qwen-ls.prompt without text: %.0f ms', (vim.loop.hrtime() - t0) / 1e6))
      H.ok(res and res.err == nil, 'qwen-ls.prompt without text answers a result: ' .. vim.inspect(res))
      H.contains(res.result.message, 'Qwen: explain', 'what to do instead')
      local path = res.result.transcript
      H.ok(path and H.exists(path), 'the transcript exists')
      child.wait_message('qwen-ls.prompt needs the prompt text', 5000)
      -- The person opens the transcript (0.10 already shows it), writes
      -- under the last "## You" and saves.
      local before = child.lua(
        [[
        local path = ...
        if vim.api.nvim_buf_get_name(0) ~= path then
          vim.cmd('edit ' .. vim.fn.fnameescape(path))
        end
        vim.wait(2000, function() return vim.lsp.buf_is_attached(0, rec.id) end, 20)
        local lines = vim.api.nvim_buf_get_lines(0, 0, -1, false)
        vim.api.nvim_buf_set_lines(0, -1, -1, false, { 'What is in the calc package?' })
        vim.cmd('write')
        return lines
      ]],
        path
      )
      H.eq('## You', before[#before - 1], 'the transcript ends with an open "## You"')
      -- The person is in the transcript: the message is one line.
      local ms = child.wait_message('qwen: calc …')
      H.log(string.format('save to answer: %.0f ms', ms))
      -- The file on disk holds the answer; the buffer, read again on
      -- progress, shows it and is not modified (the server never edits
      -- it, so there is nothing to save and no conflict).
      local after = child.lua([[
        vim.wait(5000, function()
          return table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\n'):find('two** functions', 1, true) ~= nil
        end, 20)
        local lines = vim.api.nvim_buf_get_lines(0, 0, -1, false)
        return { table.concat(lines, '\n') .. '\n', vim.bo.modified, vim.api.nvim_buf_get_name(0) }
      ]])
      H.eq(path, after[3], 'still in the transcript')
      H.contains(after[1], 'What is in the calc package?\n\n## qwen\n\n- ✓ ', 'the question, then the tool lines')
      H.contains(after[1], '`calc.go` has **two** functions:', 'the answer in the buffer')
      H.ok(after[1]:match('\n## You\n*$'), 'a new open "## You" at the end')
      H.eq(false, after[2], 'the buffer is not modified')
      H.eq(H.read(path), after[1], 'the buffer shows the file')
      local reqs = H.requests()
      local msgs = reqs[1].messages
      H.eq('What is in the calc package?', msgs[#msgs].content, 'the saved question was sent')
    end,
  },
  {
    name = 'bare LSP: a new file written on disk is announced, after a confirmation with its text',
    run = function(H)
      H.workspace()
      H.model('new-file.txtar')
      local child = start_child(H, false)
      local out = child.lua(child_prompt, 'Add a test for Add.')
      H.ok(out and out.err == nil, 'the prompt answers: ' .. vim.inspect(out))
      H.eq('I added a test for Add.', out.result.text, 'the command result')
      local rec = child.rec()
      H.eq(1, #rec.asked, 'one confirmation')
      H.contains(rec.asked[1], 'qwen-ls wants to create calc/calc_test.go (+9 -0):\n', 'the head')
      H.contains(rec.asked[1], '\n+func TestAdd(t *testing.T) {\n', 'the new text as a diff')
      H.eq({ 'Allow', 'Allow for session', 'Reject' }, rec.actions[1], 'the edit choices')
      H.contains(rec.messages, 'qwen-ls wrote calc/calc_test.go (+9 -0)', 'the disk-write notice')
      H.contains(rec.messages, 'qwen: I added a test for Add.', 'the answer')
      H.contains(H.read(H.ws .. '/calc/calc_test.go'), 'func TestAdd', 'the file on disk')
    end,
  },
  {
    name = "bare LSP: a command's permission offers the server's options by name",
    run = function(H)
      H.workspace()
      H.model('shell-permission.txtar')
      local child = start_child(H, false)
      local out = child.lua(child_prompt, 'Make the marker file.')
      H.ok(out and out.err == nil, 'the prompt answers: ' .. vim.inspect(out))
      local rec = child.rec()
      H.eq(1, #rec.asked, 'one permission request')
      H.contains(rec.asked[1], 'touch created-by-agent.txt && echo made it', 'the command')
      local titles = rec.actions[1]
      -- An untrusted folder: four options, no project rule, no ids.
      H.eq(4, #titles, 'the options: ' .. vim.inspect(titles))
      H.eq('Allow', titles[1], 'option 1')
      H.eq('Allow touch for this session', titles[2], 'option 2')
      H.ok(titles[3]:find('^Always allow for this user: '), 'option 3: ' .. titles[3])
      H.eq('Reject', titles[4], 'option 4')
      H.ok(not table.concat(titles, ' '):find('proceed_', 1, true), 'no option ids')
      H.ok(H.exists(H.ws .. '/created-by-agent.txt'), 'the allowed command ran')
    end,
  },
}
