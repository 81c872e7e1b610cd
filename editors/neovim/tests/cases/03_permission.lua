-- Permissions through vim.ui.select, cancelling a running shell command,
-- and no qwen-ls left behind after :qa!.
local function alive(pid)
  -- a zombie has exited; only its parent has not collected it yet
  local stat = io.open('/proc/' .. pid .. '/stat')
  if not stat then
    return false
  end
  local s = stat:read('*a')
  stat:close()
  return not s:match('^%d+ %b() Z')
end

-- The processes of the scripted shell command, as this machine sees them:
-- the shell whose command line writes shell.pid, and its children. The
-- command runs in a PID namespace of its own, so the number it writes with
-- $$ means nothing out here.
local function command_tree(H)
  local pids = {}
  for _, name in ipairs(vim.fn.readdir('/proc')) do
    if name:match('^%d+$') then
      local cmd = (H.read('/proc/' .. name .. '/cmdline') or ''):gsub('%z', ' ')
      if cmd:find('echo $$ > shell.pid', 1, true) and alive(name) then
        table.insert(pids, name)
      end
    end
  end
  for _, name in ipairs(vim.fn.readdir('/proc')) do
    local stat = name:match('^%d+$') and H.read('/proc/' .. name .. '/stat')
    local ppid = stat and stat:match('^%d+ %b() %a (%d+)')
    if ppid and vim.tbl_contains(pids, ppid) then
      table.insert(pids, name)
    end
  end
  return pids
end

return {
  {
    name = 'permission: a shell command is asked through vim.ui.select',
    run = function(H)
      local ws = H.workspace()
      -- a trusted folder, so "always allow in this project" is offered too
      H.trust()
      H.model('shell-permission.txtar')
      H.setup()
      vim.cmd('edit main.go')
      H.wait_client()
      local asked
      vim.ui.select = function(items, opts, cb)
        asked = { items = items, prompt = opts.prompt, formatted = vim.tbl_map(opts.format_item, items) }
        H.eq('qwen: waiting for you [default] · scripted', require('qwen').statusline(), 'statusline while asking')
        -- answer later, as a picker UI does
        vim.defer_fn(function()
          for _, o in ipairs(items) do
            if o.optionId == 'proceed_once' then
              return cb(o)
            end
          end
          cb(nil)
        end, 50)
      end
      H.type_prompt('Create the marker file')
      local res = H.wait_turn()
      H.eq('end_turn', res.stopReason, 'stop reason')
      H.ok(asked, 'vim.ui.select to be called')
      H.contains(asked.prompt, 'touch created-by-agent.txt && echo made it', 'the full command in the prompt')
      local ids = vim.tbl_map(function(o)
        return o.optionId
      end, asked.items)
      H.eq({ 'proceed_once', 'proceed_always', 'proceed_always_project', 'proceed_always_user', 'cancel' }, ids, 'the options')
      -- shown by the server's labels, in its order, never by id
      H.eq(vim.tbl_map(function(o)
        return o.name
      end, asked.items), asked.formatted, 'the labels shown')
      for i, label in ipairs(asked.formatted) do
        H.ok(not label:find(ids[i], 1, true), 'no option id in the label ' .. label)
      end
      H.ok(H.exists(ws .. '/created-by-agent.txt'), 'the command to have run')
      -- the shell output is behind the tool line
      local lines = H.chat_lines()
      for i, l in ipairs(lines) do
        if l:find('(completed)', 1, true) and l:find('touch', 1, true) then
          local chat = require('qwen.chat')
          chat.toggle_at(i)
          break
        end
      end
      H.contains(H.chat_lines(), '    made it', 'the command output, expanded')
    end,
  },
  {
    name = 'permission: dismissing vim.ui.select rejects the command',
    run = function(H)
      local ws = H.start('shell-permission.txtar', 'main.go')
      vim.ui.select = function(_, _, cb)
        cb(nil)
      end
      H.type_prompt('Create the marker file')
      H.wait_turn()
      H.ok(not H.exists(ws .. '/created-by-agent.txt'), 'the command not to run')
      local line
      for _, l in ipairs(H.chat_lines()) do
        if l:find('touch', 1, true) and l:find('^▸ ') then
          line = l
        end
      end
      H.ok(line and line:find('^▸ ✗ .*%(rejected%)$'), 'a rejected look, not failed: ' .. tostring(line))
    end,
  },
  {
    name = 'cancel: QwenCancel stops a running shell command',
    run = function(H)
      local ws = H.workspace()
      H.model('shell-cancel.txtar')
      H.setup({ approval_mode = 'yolo' })
      vim.cmd('edit main.go')
      H.wait_client()
      H.type_prompt('Wait a minute')
      H.wait(10000, function()
        local s = H.read(ws .. '/shell.pid')
        return s and s:match('%d+')
      end, 'the command to start')
      local tree = command_tree(H)
      H.ok(#tree >= 2, 'the shell and its sleep running, found ' .. vim.inspect(tree))
      H.contains(require('qwen').statusline(), 'qwen: working', 'statusline while running')
      vim.cmd('QwenCancel')
      local res = H.wait_turn(5000)
      H.eq('cancelled', res.stopReason, 'stop reason')
      H.wait(5000, function()
        for _, pid in ipairs(tree) do
          if alive(pid) then
            return false
          end
        end
        return true
      end, 'the command\'s processes ' .. table.concat(tree, ' ') .. ' to end')
      H.contains(H.chat_lines(), '— cancelled', 'the chat says cancelled')
      -- the command's line says cancelled, not failed (_meta.qwen.outcome)
      local line
      for _, l in ipairs(H.chat_lines()) do
        if l:find('^▸ ') and not l:find('(completed)', 1, true) then
          line = l
        end
      end
      H.ok(line and line:find('^▸ ⊘ .*%(cancelled%)$'), 'a cancelled look: ' .. tostring(line))
    end,
  },
  {
    name = 'exit: :qa! leaves no qwen-ls process behind',
    run = function(H)
      local ws = H.workspace()
      H.model(nil)
      local pidfile = ws .. '/../server.pid'
      local child = ws .. '/../child.lua'
      local f = io.open(child, 'w')
      f:write(string.format([[
vim.opt.runtimepath:prepend(%q)
vim.cmd('runtime plugin/qwen.lua')
vim.cmd('cd ' .. vim.fn.fnameescape(%q))
require('qwen').setup({ cmd = { %q, '--stdio' }, cmd_env = { HOME = %q, OPENAI_BASE_URL = %q, OPENAI_MODEL = 'scripted' } })
vim.cmd('edit main.go')
local client = require('qwen.client')
vim.wait(10000, function()
  local c = client.current(false)
  return c and client.is_ready(c.id)
end, 10)
local me = vim.fn.getpid()
local server
for _, d in ipairs(vim.fn.readdir('/proc')) do
  if d:match('^%%d+$') then
    local s = io.open('/proc/' .. d .. '/stat')
    if s then
      local st = s:read('*a') or ''
      s:close()
      local comm, ppid = st:match('^%%d+ %%((.-)%%) %%a (%%d+)')
      if comm:sub(1, 7) == 'qwen-ls' and tonumber(ppid) == me then
        server = d
      end
    end
  end
end
local out = io.open(%q, 'w')
out:write(server or 'none')
out:close()
vim.cmd('qa!')
]], H.plugin, ws, H.bin, H.home, H.current_model.url, pidfile))
      f:close()
      local exited
      local job = vim.fn.jobstart({ H.nvim, '--headless', '-u', 'NONE', '-i', 'NONE', '-n', '-c', 'luafile ' .. child }, {
        on_exit = function(_, code)
          exited = code
        end,
      })
      H.ok(job > 0, 'the child Neovim to start')
      H.wait(20000, function()
        return exited ~= nil
      end, 'the child Neovim to exit')
      H.eq(0, exited, 'the child exit code')
      local pid = H.read(pidfile)
      H.ok(pid and pid:match('^%d+$'), 'the server pid, got ' .. tostring(pid))
      H.wait(5000, function()
        return not alive(pid)
      end, 'qwen-ls ' .. pid .. ' to exit')
    end,
  },
}
