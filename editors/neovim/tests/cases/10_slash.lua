-- Slash commands: the server's list in the chat input's popup and in
-- :Qwen's completion, /stats answered without the model, a custom TOML
-- command ({{args}}, @{file} from the unsaved buffer, !{...} asked first),
-- the list following the command files, and /clear.

--- A project command, in the workspace's .qwen/commands (the folder must be trusted).
local function write_command(H, rel, text)
  local path = H.ws .. '/.qwen/commands/' .. rel
  vim.fn.mkdir(vim.fn.fnamemodify(path, ':h'), 'p')
  local f = assert(io.open(path, 'w'))
  f:write(text)
  f:close()
end

local tell = [==[
description = "Tell about a file, with a shell's word"
prompt = """
Request: {{args}}
The file:
@{main.go}
The shell said: !{echo shell-word-5d1 | tee shell.out}
"""
]==]

local function names(list)
  return vim.tbl_map(function(c)
    return c.name
  end, list)
end

return {
  {
    name = 'slash: the list is read defensively and matched by prefix, then by a later part, then anywhere',
    run = function(H)
      vim.opt.runtimepath:prepend(H.plugin)
      local commands = require('qwen.commands')
      for _, bad in ipairs({ 'x', 3, {}, { commands = 'x' }, vim.NIL }) do
        H.eq({}, commands.parse(bad), 'nothing from ' .. vim.inspect(bad))
      end
      local list = commands.parse({
        commands = {
          { name = 'stats', description = 'Tokens\nand time', input = vim.NIL, source = 'builtin' },
          { name = 'model', description = 'Show or set the model', input = { hint = '[model id]' } },
          { name = 'git:commit', description = 'Commit message', input = { hint = 'arguments' }, source = 'project' },
          { name = 'set-model-notes', description = 'mine', source = 'user' },
          { name = '/slash' },
          { name = 'two words' },
          { name = 'stats', description = 'a second stats is dropped' },
          'junk',
          { name = 42 },
        },
      })
      H.eq({ 'git:commit', 'model', 'set-model-notes', 'stats' }, names(list), 'the valid ones, sorted, once each')
      H.eq('Tokens and time', list[4].description, 'one line')
      H.eq('[model id]', list[2].hint, 'the hint')
      H.eq('project', list[1].source, 'the source')
      commands.set(list)
      H.eq({ 'stats' }, names(commands.match('st')), '/st')
      H.eq({ 'model', 'set-model-notes' }, names(commands.match('model')), '/model: the prefix first')
      H.eq({ 'git:commit' }, names(commands.match('commit')), '/commit finds git:commit')
      H.eq({ 'stats' }, names(commands.match('ST')), 'case-insensitive')
      H.eq({ 'stats' }, commands.complete_cmdline('st', 'Qwen st', 7), ':Qwen st<Tab>')
      H.eq({ '/stats' }, commands.complete_cmdline('/st', 'Qwen /st', 8), ':Qwen /st<Tab>')
      H.eq({ 'default' }, commands.complete_cmdline('de', 'Qwen mode de', 12), ':Qwen mode de<Tab>')
      H.eq({}, commands.complete_cmdline('x', 'Qwen stats x', 12), 'no arguments to complete for stats')
      commands.reset()
    end,
  },
  {
    name = 'slash: "/" in the chat input opens the popup, it narrows as you type, <Tab> completes, /stats needs no model',
    run = function(H)
      H.workspace()
      H.model('chat.txtar')
      local chan = H.child()
      H.child_lua(chan, [[
        vim.cmd('edit main.go')
        vim.cmd('QwenChat')
      ]])
      H.wait(10000, function()
        return H.child_lua(chan, [[
          local c = require('qwen.client').current(false)
          return c ~= nil and require('qwen.client').is_ready(c.id)
        ]])
      end, 'the child to start qwen-ls')
      local function pum()
        return H.child_lua(chan, [[
          local info = vim.fn.complete_info({ 'pum_visible', 'items', 'selected' })
          local words = {}
          for _, it in ipairs(info.items or {}) do table.insert(words, it.word) end
          return {
            visible = info.pum_visible == 1,
            words = words,
            selected = info.selected,
            -- what the popup shows now (items holds every match of the first call)
            size = (vim.fn.pum_getpos() or {}).size,
            line = vim.api.nvim_get_current_line(),
            mode = vim.api.nvim_get_mode().mode,
            completeopt = vim.o.completeopt,
            names = vim.tbl_map(function(c) return c.name end, require('qwen.commands').list),
          }
        ]])
      end
      local before = H.child_lua(chan, 'return vim.o.completeopt')
      vim.rpcnotify(chan, 'nvim_input', '/')
      local p
      H.wait(10000, function()
        p = pum()
        return p.visible and #p.words > 0
      end, 'the popup after "/"')
      H.log('the popup after "/": ' .. #p.words .. ' commands: ' .. table.concat(p.words, ' '))
      H.contains(p.words, '/stats', 'stats offered')
      H.contains(p.words, '/help', 'help offered')
      H.eq(#p.names, p.size, 'every command of the server in the popup')
      H.eq('/', p.line, 'nothing inserted before a choice')
      -- the columns line up: every description starts in one column,
      -- after the argument hints padded to one width
      local cols = H.child_lua(chan, [[
        local out = {}
        for _, it in ipairs(vim.fn.complete_info({ 'items' }).items or {}) do
          local c = require('qwen.commands').find(it.word:sub(2))
          local at = c and c.description ~= '' and it.menu:find(c.description, 1, true)
          if at then
            out[it.word] = vim.fn.strdisplaywidth(it.menu:sub(1, at - 1))
          end
        end
        return out
      ]])
      local starts = {}
      for _, col in pairs(cols) do
        starts[col] = true
      end
      H.eq(1, vim.tbl_count(starts), 'the descriptions start in one column: ' .. vim.inspect(cols))
      H.ok(cols['/model'] ~= nil and cols['/model'] > 0, 'after the hints')
      local st = #vim.tbl_filter(function(n)
        return n:sub(1, 2) == 'st'
      end, p.names)
      vim.rpcnotify(chan, 'nvim_input', 'st')
      H.wait(5000, function()
        p = pum()
        return p.line == '/st'
      end, 'the typed name')
      H.ok(p.visible, 'the popup stays open while typing')
      H.eq(st, p.size, 'narrowed to the names that start with st')
      H.ok(st < #p.names, 'fewer than all')
      vim.rpcnotify(chan, 'nvim_input', '<Tab>')
      H.wait(5000, function()
        p = pum()
        return not p.visible
      end, 'the popup to close')
      H.eq('/stats', p.line, '<Tab> completes the first match')
      H.eq('i', p.mode, 'still typing')
      H.eq(before, p.completeopt, "the person's completeopt is back")
      -- Esc-free: the popup does not open for a "/" later in the text
      vim.rpcnotify(chan, 'nvim_input', ' a/b')
      H.wait(5000, function()
        return pum().line == '/stats a/b'
      end, 'more text')
      H.ok(not pum().visible, 'no popup for a slash inside the text')
      H.child_lua(chan, [[vim.api.nvim_buf_set_lines(require('qwen.chat').input, 0, -1, false, { '/stats' })]])
      vim.rpcnotify(chan, 'nvim_input', '<C-s>')
      H.wait(15000, function()
        return H.child_lua(chan, [[
          local s = require('qwen.session')
          return not s.busy and s.last_stop ~= nil
        ]])
      end, 'the /stats turn to end')
      local stop = H.child_lua(chan, [[return require('qwen.session').last_stop]])
      H.eq('stats', stop.command, 'the answer names the command')
      local chat = H.child_lua(chan, [[return table.concat(require('qwen.chat').lines(), '\n')]])
      H.log('/stats in the chat:\n' .. chat)
      H.contains(chat, '— end_turn · /stats', 'the end line names the command')
      H.eq(0, #H.requests(), 'no model request for /stats')
    end,
  },
  {
    name = 'slash: :Qwen runs a custom TOML command with {{args}}, @{file} from the unsaved buffer and !{...} asked first',
    run = function(H)
      local ws = H.workspace()
      H.trust()
      write_command(H, 'tell.toml', tell)
      H.model(H.script([[
-- 01.response --
text: I was told.
usage: 500 5
]]))
      H.setup()
      vim.cmd('edit main.go')
      H.wait_client()
      vim.api.nvim_buf_set_lines(0, 0, 0, false, { '// unsaved-marker-9e2' })
      local asked
      vim.ui.select = function(items, opts, cb)
        asked = { prompt = opts.prompt, requests = #H.requests() }
        for _, o in ipairs(items) do
          if o.optionId == 'proceed_once' then
            return cb(o)
          end
        end
        cb(nil)
      end
      -- the names complete on the command line
      local comp = vim.fn.getcompletion('Qwen te', 'cmdline')
      H.contains(comp, 'tell', ':Qwen te<Tab>')
      H.contains(vim.fn.getcompletion('Qwen ', 'cmdline'), 'stats', 'built-ins complete too')
      vim.cmd('Qwen tell please be brief')
      local res = H.wait_turn()
      H.eq('end_turn', res.stopReason, 'stop reason')
      H.eq('tell', res.command, 'the answer names the command')
      H.ok(asked, 'the shell command to be asked first')
      H.contains(asked.prompt, 'echo shell-word-5d1', 'the command shown in the question')
      H.eq(0, asked.requests, 'asked before any model request')
      local reqs = H.requests()
      H.eq(1, #reqs, 'one model request')
      local user = ''
      for _, m in ipairs(reqs[1].messages) do
        if m.role == 'user' then
          user = type(m.content) == 'string' and m.content or vim.json.encode(m.content)
        end
      end
      H.contains(user, 'Request: please be brief', '{{args}}')
      H.contains(user, 'unsaved-marker-9e2', '@{main.go} as the buffer has it')
      H.contains(user, 'The shell said: shell-word-5d1', "!{...} replaced by its output")
      H.ok(not user:find('!{', 1, true), 'no !{ left in the prompt')
      H.eq('shell-word-5d1\n', H.read(ws .. '/shell.out'), 'the command ran once allowed')
      H.ok(not H.read(ws .. '/main.go'):find('unsaved-marker', 1, true), 'main.go not saved')
      H.contains(H.chat_lines(), '/tell please be brief', 'the prompt as typed in the chat')
      H.contains(H.chat_lines(), 'I was told.', 'the answer')
    end,
  },
  {
    name = 'slash: a new command file reaches the list; /clear empties the chat and keeps the session; an unknown name is refused',
    run = function(H)
      H.workspace()
      H.trust()
      H.model('unsaved-read.txtar')
      H.setup()
      vim.cmd('edit main.go')
      H.wait_client()
      vim.cmd('QwenAsk What does main.go do?')
      H.wait_turn()
      local commands = require('qwen.commands')
      H.wait(5000, function()
        return commands.loaded and commands.find('clear') ~= nil
      end, 'the list after the first session')
      H.ok(not commands.find('added'), 'no "added" command yet')
      write_command(H, 'team/added.toml', 'description = "Added while running"\nprompt = "Say {{args}}"\n')
      H.wait(15000, function()
        return commands.find('team:added') ~= nil
      end, 'available_commands_update with team:added')
      H.eq('Added while running', commands.find('team:added').description, 'its description')
      H.eq('project', commands.find('team:added').source, 'a project command')
      local session = require('qwen.session')
      local sid = session.session_id
      H.contains(H.chat_lines(), 'What does main.go do?', 'the first turn in the chat')
      vim.cmd('Qwen clear')
      local res = H.wait_turn()
      H.eq('clear', res.command, 'the answer names the command')
      H.eq(sid, session.session_id, 'the same session')
      local text = table.concat(H.chat_lines(), '\n')
      H.ok(not text:find('What does main.go do?', 1, true), 'the chat cleared:\n' .. text)
      H.contains(text, ':QwenSessions lists it', 'where the earlier conversation went')
      local listed
      session.list_sessions(function(s)
        listed = s
      end)
      H.wait(5000, function()
        return listed ~= nil
      end, 'the session list')
      local titles = vim.tbl_map(function(s)
        return s.title or ''
      end, listed)
      H.contains(titles, 'What does main.go do?', 'the earlier conversation kept as a session')
      local n = #H.requests()
      vim.cmd('Qwen no-such-command')
      H.ok(not session.busy, 'no turn started')
      H.eq(n, #H.requests(), 'an unknown name goes nowhere')
      H.ok(not table.concat(H.chat_lines(), '\n'):find('no-such-command', 1, true), 'nor into the chat')
    end,
  },
}
