-- The help file: the shipped doc/tags is what :helptags makes, every
-- command, option and key of the plugin is documented, and :help qwen
-- works in a Neovim that installed the plugin exactly as the README says.
return {
  {
    name = 'docs: the shipped doc/tags is current, and every command, option and key has help',
    run = function(H)
      local tmp = vim.fn.tempname()
      vim.fn.mkdir(tmp .. '/doc', 'p')
      H.defer(function()
        vim.fn.delete(tmp, 'rf')
      end)
      -- the whole doc folder, as a plugin manager's :helptags sees it (a
      -- second .txt there can break it: E670)
      H.sh({ 'cp', '-R', H.plugin .. '/doc/.', tmp .. '/doc/' })
      vim.fn.delete(tmp .. '/doc/tags')
      vim.cmd('helptags ' .. vim.fn.fnameescape(tmp .. '/doc'))
      local tags = H.read(tmp .. '/doc/tags')
      H.ok(tags and #tags > 0, 'a tags file')
      H.eq(tags, H.read(H.plugin .. '/doc/tags'), 'doc/tags as :helptags makes it (run :helptags editors/neovim/doc)')
      vim.opt.runtimepath:prepend(H.plugin)
      vim.cmd('runtime plugin/qwen.lua')
      local names = vim.tbl_keys(vim.api.nvim_get_commands({}))
      local count = 0
      for _, name in ipairs(names) do
        if name:match('^Qwen') then
          count = count + 1
          H.contains(tags, ':' .. name .. '\t', 'a help tag for :' .. name)
        end
      end
      H.eq(11, count, 'the number of commands')
      local doc = H.read(tmp .. '/doc/qwen.txt')
      local defaults = require('qwen.config').defaults
      for key in pairs(defaults) do
        H.contains(tags, 'qwen-option-' .. key .. '\t', 'a help tag for option ' .. key)
      end
      for key, lhs in pairs(defaults.keys) do
        H.ok(doc:find('\n    ' .. key .. ' +' .. vim.pesc(lhs) .. ' ') ~= nil, 'the key ' .. key .. ' (' .. lhs .. ') in the key table')
      end
      for _, name in ipairs(require('qwen.review').action_order) do
        local plug = '<Plug>(' .. require('qwen.review').actions[name].plug .. ')'
        H.contains(doc, plug, 'the help names ' .. plug)
      end
      vim.cmd('help :QwenReview')
      H.contains(vim.api.nvim_get_current_line(), '*:QwenReview*', 'the help for :QwenReview')
      vim.cmd('help qwen-review')
      H.contains(vim.api.nvim_get_current_line(), '*qwen-review*', 'the help for reviewing')
    end,
  },
  {
    name = "docs: :help qwen and :help qwen-keys work after the README's runtimepath install",
    run = function(H)
      local tmp = vim.fn.tempname()
      vim.fn.mkdir(tmp, 'p')
      H.defer(function()
        vim.fn.delete(tmp, 'rf')
      end)
      -- init.lua exactly as the README and :help qwen-install say
      local init = tmp .. '/init.lua'
      vim.fn.writefile({
        "vim.opt.runtimepath:append('" .. H.plugin .. "')",
        "require('qwen').setup({})",
      }, init)
      local out = tmp .. '/result.json'
      local probe = table.concat({
        'local res = {}',
        "for _, topic in ipairs({ 'qwen', 'qwen-keys' }) do",
        "  vim.v.errmsg = ''",
        "  local ok, err = pcall(vim.cmd, 'help ' .. topic)",
        '  res[topic] = { ok = ok, err = ok and vim.v.errmsg or tostring(err), line = vim.api.nvim_get_current_line(), file = vim.fn.expand("%:t") }',
        "  pcall(vim.cmd, 'helpclose')",
        'end',
        "vim.fn.writefile({ vim.json.encode(res) }, '" .. out .. "')",
      }, '\n')
      vim.fn.writefile(vim.split(probe, '\n'), tmp .. '/probe.lua')
      -- a fresh Neovim: its own config and data folders, nothing else
      local env = 'XDG_CONFIG_HOME=' .. tmp .. '/config XDG_DATA_HOME=' .. tmp .. '/data XDG_STATE_HOME=' .. tmp .. '/state'
      local cmd = string.format('cd %s && env %s %s --headless -u %s -i NONE -n -c %s -c %s </dev/null 2>&1',
        vim.fn.shellescape(tmp), env, vim.fn.shellescape(H.nvim), vim.fn.shellescape(init),
        vim.fn.shellescape('luafile ' .. tmp .. '/probe.lua'), vim.fn.shellescape('qa!'))
      vim.cmd('cd ' .. vim.fn.fnameescape(tmp))
      local log = vim.fn.system(cmd)
      local got = H.read(out)
      H.ok(got, 'the child Neovim to write its result; it said:\n' .. log)
      local res = vim.json.decode(got)
      for _, topic in ipairs({ 'qwen', 'qwen-keys' }) do
        local r = res[topic]
        H.ok(r.ok, ':help ' .. topic .. ' to work, got ' .. tostring(r.err))
        H.ok(not tostring(r.err):find('E149', 1, true), 'no E149 for ' .. topic .. ': ' .. tostring(r.err))
        H.eq('qwen.txt', r.file, ':help ' .. topic .. ' opens qwen.txt')
        H.contains(r.line, '*' .. topic .. '*', 'the cursor on the tag of ' .. topic)
      end
      H.log('child Neovim: ' .. vim.trim(log):gsub('\n', ' | '))
    end,
  },
}
