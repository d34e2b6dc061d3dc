; Ruby definitions and references for the spider code graph.
; Capture names are documented in spider/graph/extract.py.

; --- classes and modules (a module is a class node; `class << self` is transparent)
(class name: [(constant) (scope_resolution)] @name.definition.class) @definition.class
(module name: [(constant) (scope_resolution)] @name.definition.module) @definition.module

; --- methods (def self.x belongs to the enclosing class like def x)
(method name: (_) @name.definition.method) @definition.method
(singleton_method name: (_) @name.definition.method) @definition.method

; --- superclass and mixins
(superclass (constant) @name.reference.inherits) @reference.inherits
(superclass (scope_resolution scope: (_) @receiver.reference.inherits
                              name: (constant) @name.reference.inherits)) @reference.inherits
(call
  method: (identifier) @_mixin (#match? @_mixin "^(include|extend|prepend)$")
  arguments: (argument_list (constant) @name.reference.inherits)) @reference.inherits

; --- calls
(call !receiver method: (identifier) @name.reference.call) @reference.call
(call receiver: (_) @receiver.reference.call method: (identifier) @name.reference.call) @reference.call
; a bare identifier standing as a statement is a method call without parentheses
(body_statement (identifier) @name.reference.call @reference.call)
(then (identifier) @name.reference.call @reference.call)
(else (identifier) @name.reference.call @reference.call)
(begin (identifier) @name.reference.call @reference.call)
(interpolation (identifier) @name.reference.call @reference.call)

; --- imports
(call
  method: (identifier) @_require (#match? @_require "^(require|load|autoload)$")
  arguments: (argument_list (string (string_content) @module.reference.import))) @reference.import
(call
  method: (identifier) @_require (#eq? @_require "require_relative")
  arguments: (argument_list (string (string_content) @path.reference.import))) @reference.import
