; Ruby: what a file declares, for packer/summaries/treesitter.py.

(class name: (_) @name) @definition.class
(module name: (_) @name) @definition.module
(singleton_class value: (_) @name) @definition.class
(method name: (_) @name) @definition.method
(singleton_method name: (_) @name) @definition.method

(call
  method: (identifier) @_attr (#match? @_attr "^attr_(reader|writer|accessor)$")
  arguments: (argument_list . (_) @name)) @definition.field
(call
  method: (identifier) @_alias (#match? @_alias "^(alias_method|define_method|delegate|def_delegators?)$")
  arguments: (argument_list . (_) @name)) @definition.method
(alias name: (_) @name) @definition.method
(assignment left: (constant) @name) @definition.constant

(call
  method: (identifier) @_require (#match? @_require "^(require|require_relative|autoload)$")
  arguments: (argument_list (string (string_content) @import)))
